"""The sanitizer's guarantees: it restores everything, nests, leaves numbers
untouched, survives DataLoader workers and torch.compile, and points at user lines."""

from __future__ import annotations

import contextlib
import functools
import warnings

import pytest

import torchlint
from torchlint.sanitizer.notices import COMPILED_NOTE

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional


def test_everything_is_restored_after_a_normal_exit(net, batches, global_state):
    before = global_state()
    with torchlint.sanitize(inplace="always", summary=False):
        during = global_state()
        torch.set_grad_enabled(False)
        net(batches[0][0])
    assert during != before  # the session really installed something...
    assert during["anomaly"] and during["function_modes"] == before["function_modes"] + 1
    assert global_state() == before  # ...and took all of it away


@pytest.mark.parametrize("action", ["warn", "raise", "record"])
def test_everything_is_restored_when_the_body_raises(net, action, global_state):
    before = global_state()
    with pytest.raises((ValueError, torchlint.SanitizerError)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with torchlint.sanitize(inplace="always", action=action, summary=False):
                with torch.no_grad():
                    try:
                        net(torch.randn(2, 8, dtype=torch.float64))  # TS103 (raises with action="raise")
                    except RuntimeError:
                        pass
                    raise ValueError("the training loop crashed")
    assert global_state() == before
    # autograd's own in-place detection works again without our saved-tensor hooks
    x = torch.randn(3, requires_grad=True)
    y = x.sigmoid()
    y.mul_(2)
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0 instead. Hint"):
        y.sum().backward()


def test_nested_sessions(net, quiet, global_state):
    before = global_state()
    nan_batch = torch.full((2, 8), float("nan"))
    with torchlint.sanitize(**quiet, anomaly=False) as outer:
        assert not torch.is_anomaly_enabled()
        with torchlint.sanitize(**quiet, anomaly=True) as inner:
            assert torch.is_anomaly_enabled()
            assert len(global_state()["module_pre_hooks"]) == len(before["module_pre_hooks"]) + 1  # shared
            with pytest.raises(RuntimeError):
                net(torch.randn(2, 8, dtype=torch.float64))
        assert not torch.is_anomaly_enabled()  # the outer session's setting is back
        assert inner.codes() == {"TS103"}
        assert outer.codes() == {"TS103"}  # merged into the enclosing report at inner exit
        net(nan_batch)  # the outer session still watches
    assert outer.codes() == {"TS103", "TS104"}
    assert inner.codes() == {"TS103"}
    assert global_state() == before


def test_same_session_object_cannot_be_entered_twice(quiet):
    session = torchlint.sanitize(**quiet)
    with session:
        with pytest.raises(RuntimeError, match="already active"):
            with session:
                pass


def test_dataloader_with_two_workers_inside(net):
    data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
    loader = torch.utils.data.DataLoader(data, batch_size=16, num_workers=2)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    with torchlint.sanitize(summary=False) as report:
        steps = 0
        for x, y in loader:
            optimizer.zero_grad()
            F.cross_entropy(net(x), y).backward()
            optimizer.step()
            steps += 1
    assert steps == 4
    assert report.findings == []


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.drop = nn.Dropout(0.3)  # consumes the RNG: sanitize() must not
        self.fc = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(self.drop(x.flatten(1)))


def run_training(sanitized: bool):
    torch.manual_seed(0)
    model = SmallCNN()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    generator = torch.Generator().manual_seed(3)

    def loop():
        for _ in range(4):
            x = torch.randn(8, 3, 32, 32, generator=generator)
            y = torch.randint(0, 10, (8,), generator=generator)
            optimizer.zero_grad()
            loss = nn.CrossEntropyLoss()(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.detach().clone())

    if sanitized:
        with torchlint.sanitize(anomaly=False, summary=False) as report:
            loop()
        assert report.findings == []
    else:
        loop()
    return losses, [p.detach().clone() for p in model.state_dict().values()]


def test_bit_identical_losses_and_weights_with_anomaly_off():
    plain_losses, plain_weights = run_training(sanitized=False)
    losses, weights = run_training(sanitized=True)
    assert all(torch.equal(a, b) for a, b in zip(plain_losses, losses))
    assert len(weights) == len(plain_weights)
    assert all(torch.equal(a, b) for a, b in zip(plain_weights, weights))


def test_locations_are_user_lines_even_through_stdlib_frames(mark):
    model = nn.Sequential(nn.Linear(8, 4), nn.ReLU())  # torch code only, down to the failing layer
    dispatching = functools.singledispatch(model)  # functools (stdlib, pure Python) calls the model
    with pytest.warns(torchlint.SanitizerWarning) as caught:
        with torchlint.sanitize(summary=False, training_checks=False) as report:
            for _ in range(3):
                with pytest.raises(RuntimeError):
                    dispatching(torch.randn(2, 8, dtype=torch.float64))  # user-line
    (finding,) = report.findings
    assert (finding.filename, finding.lineno, finding.count) == (__file__, mark("user-line"), 3)
    # one warning per distinct finding and location, attributed to the user's line
    ours = [w for w in caught if issubclass(w.category, torchlint.SanitizerWarning)]
    assert len(ours) == 1
    assert (ours[0].filename, ours[0].lineno) == (__file__, mark("user-line"))


def test_torch_compile_does_not_crash_and_is_noted_once(capsys):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    compiled = torch.compile(model, backend="eager")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with torchlint.sanitize(summary=False) as report:
        for _ in range(3):
            optimizer.zero_grad()
            F.cross_entropy(compiled(torch.randn(4, 8)), torch.tensor([0, 1, 2, 0])).backward()
            optimizer.step()
    assert report.findings == []
    assert len(report.notes) == 1 and report.notes[0].startswith("compiled regions are not inspected")
    assert capsys.readouterr().err.count("compiled regions are not inspected") == 1


def test_module_calls_in_another_thread_have_their_own_root(quiet):
    import threading

    inner = nn.Linear(4, 4)

    class SpawnsThread(nn.Module):
        def forward(self, x):
            worker = threading.Thread(target=inner, args=(torch.full((2, 4), float("nan")),))
            worker.start()  # the thread's call is a root model call of its own, not nested in ours
            worker.join()
            return x

    outer = SpawnsThread()
    with torchlint.sanitize(**quiet, anomaly=False) as report:
        outer(torch.zeros(2, 4))
    (finding,) = report.by_code("TS104")
    # No frame of the thread names the model, so it goes by its class name.
    assert finding.details["module"] == "Linear" and finding.details["nan"] == 8


# -- no reference cycles: a graph dropped without backward is freed at once ----------------------
OPTION_SETS = [
    {},
    {"anomaly": "full"},
    {"anomaly": False},
    {"inplace": "always"},
    {"inplace": "always", "anomaly": "full", "accelerator_devices": ("cpu",)},
    {"inplace": "never", "training_checks": False, "nonfinite": False},
    {"accelerator_devices": ("cpu",)},
]


@pytest.mark.parametrize(
    "options", OPTION_SETS, ids=lambda options: ",".join(f"{k}={v}" for k, v in options.items()) or "defaults"
)
def test_a_graph_dropped_without_backward_is_freed(options):
    import gc
    import weakref

    torch.manual_seed(0)
    model = SmallCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(4, 3, 32, 32), torch.tensor([0, 1, 2, 3])
    gc.disable()  # freed by reference counting alone: a cycle would keep the graph until a collection
    try:
        with torchlint.sanitize(summary=False, action="record", **options) as report:
            for _ in range(2):  # training steps (graphs consumed by backward)
                optimizer.zero_grad()
                F.cross_entropy(model(x), y).backward()
                optimizer.step()
            refs = []
            for _ in range(3):  # evaluation forward passes with autograd on, never backpropagated
                hidden = F.relu(model.bn(model.conv1(x)))  # saved by the graph
                refs.append(weakref.ref(hidden))
                logits = model.fc(model.drop(F.max_pool2d(F.relu(model.conv2(F.max_pool2d(hidden, 2))), 2).flatten(1)))
                loss = F.cross_entropy(logits, y)
                del hidden, logits, loss
                assert refs[-1]() is None, "the dropped graph is still alive"
        assert all(ref() is None for ref in refs)
    finally:
        gc.enable()
    assert report.by_code("TS101") == [] and report.by_code("TS105") == []


def test_eval_forward_with_grad_is_reported_with_the_inplace_check_on(mark):
    torch.manual_seed(0)
    model = SmallCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(4, 3, 32, 32), torch.tensor([0, 1, 2, 3])
    with torchlint.sanitize(summary=False, action="record", inplace="always") as report:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        model.eval()
        for _ in range(2):
            model(x)  # eval-line
        model.train()
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    (finding,) = report.by_code("TS110")
    assert finding.lineno == mark("eval-line") and finding.count == 2


def test_reading_a_frames_locals_pins_nothing_and_changes_nothing():
    import sys
    import weakref

    from torchlint.sanitizer.locations import frame_locals

    def training_step():
        activations = torch.randn(8)
        ref = weakref.ref(activations)
        names = frame_locals(sys._getframe())  # as the sanitizer names the user's variables
        assert names["activations"] is activations
        del activations, names
        return ref

    assert training_step()() is None  # the frame's snapshot did not keep it alive

    def keeps_its_locals():
        config = {"lr": 0.1}
        hparams = locals()  # the user holds the snapshot: it must stay as it is
        frame_locals(sys._getframe())
        return hparams

    assert keeps_its_locals()["config"] == {"lr": 0.1}


class TinyGPT(nn.Module):
    """Two pre-norm transformer blocks (nanoGPT's shape), residuals written `x = x + ...`."""

    def __init__(self, vocab: int = 17, width: int = 32, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.embed = nn.Embedding(vocab, width)
        self.blocks = nn.ModuleList(
            nn.ModuleDict(
                {
                    "ln1": nn.LayerNorm(width),
                    "qkv": nn.Linear(width, 3 * width),
                    "proj": nn.Linear(width, width),
                    "ln2": nn.LayerNorm(width),
                    "fc": nn.Linear(width, 4 * width),
                    "out": nn.Linear(4 * width, width),
                }
            )
            for _ in range(2)
        )
        self.head = nn.Linear(width, vocab)

    def forward(self, idx):
        x = self.embed(idx)
        batch, steps, width = x.shape
        for block in self.blocks:
            q, k, v = block["qkv"](block["ln1"](x)).split(width, dim=2)
            q, k, v = (t.view(batch, steps, self.heads, -1).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(batch, steps, width)
            x = x + block["proj"](y)
            x = x + block["out"](F.gelu(block["fc"](block["ln2"](x))))
        return self.head(x)


def compiled_losses(sanitized: bool, **options):
    import torch._dynamo

    torch._dynamo.reset()
    counters = torch._dynamo.utils.counters
    counters.clear()
    torch.manual_seed(0)
    model = TinyGPT()
    compiled = torch.compile(model, backend="aot_eager")  # dynamo and AOTAutograd, no C++ compiler
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(1)
    losses = []
    context = torchlint.sanitize(summary=False, action="record", **options) if sanitized else contextlib.nullcontext()
    with context as report:
        for _ in range(4):
            idx = torch.randint(0, 17, (4, 8), generator=generator)
            loss = F.cross_entropy(compiled(idx).flatten(0, 1), idx.roll(-1, 1).flatten())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.detach().clone())
    graphs = (counters["stats"]["unique_graphs"], sum(counters["graph_break"].values()))
    return losses, graphs, report


@pytest.mark.parametrize("options", [{"inplace": "always"}, {"inplace": "auto", "accelerator_devices": ("cpu",)}])
def test_torch_compile_with_the_inplace_check_keeps_losses_bit_identical(options):
    plain, plain_graphs, _ = compiled_losses(sanitized=False)
    losses, graphs, report = compiled_losses(sanitized=True, **options)
    assert all(torch.equal(a, b) for a, b in zip(plain, losses))
    assert graphs == plain_graphs == (1, 0)  # one graph, no graph break, no recompilation
    assert report.findings == []
    assert report.notes == [COMPILED_NOTE]


def test_a_compiled_function_is_noted_too():
    @torch.compile(backend="eager")
    def step(x, weight):
        return (x @ weight).relu().sum()

    weight = torch.randn(4, 4, requires_grad=True)
    with torchlint.sanitize(summary=False, action="record", inplace="always") as report:
        step(torch.randn(3, 4), weight).backward()
    assert report.findings == [] and report.notes == [COMPILED_NOTE]
