"""TL006: a model handed back by a chain of project functions that only construct it (a test
helper calling the package's builder, which calls the class) is as fresh as the class called
directly: run untrained and never loaded, it is a smoke test, not evaluation. And a call whose
result the code then uses as a module through a move or a wrapper (``model = net_fn(cfg).cuda()``
... ``model.eval()``) constructs the model; it runs no forward."""

from expect_markers import assert_marked, check
from project_helpers import write

from torchlint.engine.lint import lint_file
from torchlint.engine.rule import all_rules

CODE = "TL006"

_PACKAGE = {
    "speechnet/__init__.py": "",
    "speechnet/layers.py": """
        from torch import nn


        class Synthesizer(nn.Module):
            def __init__(self, vocab, channels=32):
                super().__init__()
                self.embed = nn.Embedding(vocab, channels)
                self.proj = nn.Linear(channels, 80)

            def forward(self, tokens, frames):
                return self.proj(self.embed(tokens)) + frames.mean()
        """,
    "speechnet/text.py": """
        def encode(text):
            return [ord(c) % 40 for c in text[:10]]
        """,
    "speechnet/builder.py": """
        from speechnet.layers import Synthesizer


        def synthesizer(vocab, channels=32):
            net = Synthesizer(vocab, channels=channels)
            return net
        """,
}

# A test folder beside the package, in a checkout copied without its root marker: the test imports
# the package from the folder above its own, as it does once installed from the checkout.
_TEST = """
    import torch

    from speechnet.builder import synthesizer
    from speechnet.text import encode


    def _make_model(channels=16):
        model = synthesizer(vocab=40, channels=channels)
        LOAD
        return model


    def test_synthesizer_shapes():
        tokens = torch.LongTensor([encode("hello world"), encode("good night")])
        frames = torch.rand(2, 3, 80)
        model = _make_model()
        out = model(tokens, frames)  MARKER
        print("Output:", out.size())
    """


def _lint_test(tmp_path, test: str, builder: str | None = None) -> list:
    files = dict(_PACKAGE)
    if builder is not None:
        files["speechnet/builder.py"] = builder
    write(tmp_path, {**files, "tests/test_synthesizer.py": test})
    findings = lint_file(str(tmp_path / "tests" / "test_synthesizer.py"), [all_rules()[CODE]]).findings
    assert_marked(findings, test, (CODE,))
    return findings


def test_a_model_from_a_chain_of_builders_run_untrained_is_a_smoke_test(tmp_path):
    _lint_test(tmp_path, _TEST.replace("LOAD", "").replace("MARKER", ""))


def test_a_model_the_test_helper_loads_a_checkpoint_into_is_still_reported(tmp_path):
    test = _TEST.replace("LOAD", 'model.load_state_dict(torch.load("tts.pt"))').replace("MARKER", "# expect: TL006")
    findings = _lint_test(tmp_path, test)
    assert findings[0].line == 18
    assert findings[0].message.startswith("`model(...)` evaluates with autograd on in `test_synthesizer_shapes()`")


def test_a_builder_that_loads_pretrained_weights_builds_no_fresh_model(tmp_path):
    builder = """
        import torch

        from speechnet.layers import Synthesizer


        def synthesizer(vocab, channels=32):
            net = Synthesizer(vocab, channels=channels)
            net.load_state_dict(torch.load("pretrained.pt"))
            return net
        """
    test = _TEST.replace("LOAD", "").replace("MARKER", "# expect: TL006")
    findings = _lint_test(tmp_path, test, builder)
    assert "`model(...)` evaluates with autograd on" in findings[0].message


def test_a_builder_that_hands_the_model_to_other_code_builds_no_fresh_model(tmp_path):
    builder = """
        from speechnet.layers import Synthesizer
        from speechnet.checkpoints import restore


        def synthesizer(vocab, channels=32):
            net = Synthesizer(vocab, channels=channels)
            restore(net)
            return net
        """
    _lint_test(tmp_path, _TEST.replace("LOAD", "").replace("MARKER", "# expect: TL006"), builder)


_CONSTRUCTOR_RESULT = """
    import torch

    from zoo import network_factory


    def score(net, batches):
        with torch.no_grad():
            return sum((net(x).argmax(1) == y).sum().item() for x, y in batches)


    def test_network(cfg, batches, net=None):
        if net is None:
            net = network_factory(cfg.arch)
        model = WRAP
        model.eval()
        acc = score(model, batches)
        FORWARD
        return acc
    """


def test_a_call_whose_moved_result_is_used_as_a_model_builds_it(lint):
    source = _CONSTRUCTOR_RESULT.replace("WRAP", "net(cfg).cuda()").replace("FORWARD", "")
    check(lint, source, CODE)


def test_a_call_whose_wrapped_result_is_used_as_a_model_builds_it(lint):
    source = _CONSTRUCTOR_RESULT.replace("WRAP", "torch.nn.DataParallel(net(cfg))").replace("FORWARD", "")
    check(lint, source, CODE)


def test_the_built_model_run_outside_no_grad_is_still_reported(lint):
    forward = "print(model(cfg.probe_batch).softmax(1))  # expect: TL006"
    source = _CONSTRUCTOR_RESULT.replace("WRAP", "net(cfg).cuda()").replace("FORWARD", forward)
    findings = check(lint, source, CODE)
    assert findings[0].line == 18
    assert findings[0].message.startswith("`model(...)` evaluates with autograd on in `test_network()`")
