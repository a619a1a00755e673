"""TL006: a call whose result the code then uses as a model builds it (``net = cfg.network()``
... ``net.eval()``), it runs no forward; and ``self.model.score_model(step)``, where the project's
classes define ``score_model`` as a method and never store an attribute so named, runs that method."""

from expect_markers import check
from project_helpers import lint_in_project

CODE = "TL006"

_FACTORY = """
    import torch


    def evaluate(cfg, loader, checkpoint_path):
        segmenter = cfg.network()
        segmenter = segmenter.to(cfg.device)
        segmenter.load_state_dict(torch.load(checkpoint_path)["weights"])
        segmenter.eval()
        hits = 0
        CONTEXT
            for points, labels in loader:
                hits += (segmenter(points).argmax(1) == labels).sum().item()  MARKER
        return hits
    """


def test_a_network_built_by_a_config_factory_is_no_forward(lint):
    check(lint, _FACTORY.replace("CONTEXT", "with torch.no_grad():").replace("MARKER", ""), CODE)


def test_the_forward_of_the_factory_built_network_outside_no_grad_is_reported(lint):
    findings = check(lint, _FACTORY.replace("CONTEXT", "if True:").replace("MARKER", "# expect: TL006"), CODE)
    assert findings[0].message.startswith("`segmenter(...)` evaluates with autograd on in `evaluate()`")


def test_a_forward_whose_output_is_moved_stays_a_forward(lint):
    # `.to()` / `.cuda()` are a tensor's too: only module-only uses make the call a constructor.
    findings = check(
        lint,
        """
        import torch


        def evaluate(model, loader):
            model.eval()
            for x, y in loader:
                logits = model.classifier(x)  # expect: TL006
                logits = logits.cuda()
                print((logits.argmax(1) == y).float().mean())
        """,
        CODE,
    )
    assert "`model.classifier(...)`" in findings[0].message


_MODEL = """\
import torch
from torch import nn


class Pix2Pix:
    def __init__(self, opt):
        self.net_g = nn.Conv2d(3, 3, 3, padding=1)
        self.optimizer = torch.optim.Adam(self.net_g.parameters())

    def score_model(self, step):
        self.net_g.eval()
        with torch.no_grad():
            fake = self.net_g(self.sample)
        self.net_g.train()
        return {"l1": fake.abs().mean().item(), "step": step}
"""
_LOOP = """\
import torch


class Loop:
    def __init__(self, opt, batches):
        from models import build_model

        self.model = build_model(opt)
        self.batches = batches

    def evaluate(self, step):
        metrics = CALL
        print(step, metrics)

    def run(self, steps):
        model = self.model
        for step in range(steps):
            for batch in self.batches:
                model.set_input(batch)
                model.optimize_parameters(step)
            self.evaluate(step)
"""


def _lint(tmp_path, call, **extra):
    files = {"models/__init__.py": "", "models/pix2pix.py": _MODEL, "loop.py": _LOOP.replace("CALL", call), **extra}
    return lint_in_project(tmp_path, files, "loop.py", CODE)


def test_a_method_the_project_defines_is_no_model_whatever_its_name(tmp_path):
    assert _lint(tmp_path, "self.model.score_model(step)") == []


def test_a_method_name_the_project_also_stores_as_an_attribute_keeps_the_finding(tmp_path):
    extra = {"models/ensemble.py": "class Ensemble:\n    def __init__(self, net):\n        self.score_model = net\n"}
    findings = _lint(tmp_path, "self.model.score_model(step)", **extra)
    assert [(f.line, f.code) for f in findings] == [(12, CODE)]
    assert "`self.model.score_model(...)` evaluates with autograd on in `evaluate()`" in findings[0].message


def test_the_trained_generator_run_outside_no_grad_is_reported(tmp_path):
    findings = _lint(tmp_path, "self.model.net_g(self.model.sample)")
    assert [(f.line, f.code) for f in findings] == [(12, CODE)]


def test_a_method_of_a_network_the_file_builds_runs_its_layers(lint):
    # `def encoder(self, x)` is a method, but of a network: calling it runs a forward.
    check(
        lint,
        """
        import torch
        from torch import nn


        class AutoEncoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.down = nn.Linear(784, 32)
                self.up = nn.Linear(32, 784)

            def encoder(self, x):
                return torch.relu(self.down(x))

            def forward(self, x):
                return torch.sigmoid(self.up(self.encoder(x)))


        model = AutoEncoder()
        optimizer = torch.optim.Adam(model.parameters())
        for x, _ in train_loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), x).backward()
            optimizer.step()
        model.eval()
        codes = []
        for x, _ in test_loader:
            codes.append(model.encoder(x).detach().numpy())  # expect: TL006
        """,
        CODE,
    )
