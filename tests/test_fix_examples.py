"""The bundled buggy examples go through the real `torchlint --fix --unsafe-fixes`, and the fixed
scripts (and the tutorial notebook's cells, run in order as a kernel runs them) train for a few
steps on the CPU: they run, and the bugs are gone -- each optimizer step
applies freshly computed gradients, the model is in eval mode without autograd while it is
validated and back in training mode when it trains, the scheduler steps after the optimizer.
The same checks on the unfixed scripts show the bugs, so the checks can fail."""

import importlib.util
import json
import re
import shutil
import subprocess
import sys
import types
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from torch.optim.optimizer import register_optimizer_step_pre_hook  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def fixed_copy(tmp_path, name):
    """A copy of the example after `torchlint --fix --unsafe-fixes`; asserts the run's outcome."""
    path = tmp_path / name
    shutil.copy(EXAMPLES / name, path)
    run = subprocess.run(
        [sys.executable, "-m", "torchlint", "--fix", "--unsafe-fixes", "--show-fixes", str(path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert run.returncode in (0, 1), run.stderr
    assert "Fixed" in run.stdout and "warning" not in run.stderr, run.stdout + run.stderr
    if path.suffix == ".py":
        compile(path.read_text(), str(path), "exec")
    return path


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Steps:
    """Watches every optimizer step: a parameter's gradient tensor that an earlier step already
    applied (backward added into it instead of a fresh one) means the gradients were not cleared."""

    def __init__(self):
        self.steps = 0
        self.stale = 0
        self._applied = {}

    def __enter__(self):
        self._handle = register_optimizer_step_pre_hook(self._before_step)
        return self

    def __exit__(self, *exc):
        self._handle.remove()

    def _before_step(self, optimizer, args, kwargs):
        self.steps += 1
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if self._applied.get(id(p)) is p.grad:
                    self.stale += 1
                self._applied[id(p)] = p.grad


def record_modes(module_cls, monkeypatch):
    """(training?, autograd on?) of every forward of ``module_cls``."""
    calls = []
    forward = module_cls.forward

    def recording(self, *args, **kwargs):
        calls.append((self.training, torch.is_grad_enabled()))
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(module_cls, "forward", recording)
    return calls


@pytest.fixture
def no_torchvision(monkeypatch):
    """mnist_buggy.py imports torchvision for its data only; the test feeds its own tensors."""
    stub = types.ModuleType("torchvision")
    stub.datasets = stub.transforms = types.SimpleNamespace()
    monkeypatch.setitem(sys.modules, "torchvision", stub)


def run_mnist(module, monkeypatch):
    torch.manual_seed(0)
    images, labels = torch.randn(16, 1, 28, 28), torch.randint(0, 10, (16,))
    loader = DataLoader(TensorDataset(images, labels), batch_size=4)
    model = module.Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1000)
    calls = record_modes(module.Net, monkeypatch)
    with Steps() as steps, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module.train(model, "cpu", loader, optimizer, scheduler, 1)
        trained = len(calls)
        accuracy = module.validate(model, "cpu", loader)
    order_warnings = [w for w in caught if "lr_scheduler.step()" in str(w.message)]
    return steps, calls[:trained], calls[trained:], accuracy, order_warnings


def test_fixed_mnist_trains_and_its_bugs_are_gone(tmp_path, monkeypatch, no_torchvision):
    module = load(fixed_copy(tmp_path, "mnist_buggy.py"), "fixed_mnist")
    steps, training, validation, accuracy, order_warnings = run_mnist(module, monkeypatch)
    assert steps.steps == 4 and steps.stale == 0  # TL001: cleared every iteration
    assert all(train and grad for train, grad in training)
    assert validation and all(not train and not grad for train, grad in validation)  # TL005, TL006
    assert 0.0 <= accuracy <= 1.0
    assert order_warnings == []  # TL015: no "lr_scheduler.step() before optimizer.step()"


def test_unfixed_mnist_shows_the_bugs(monkeypatch, no_torchvision):
    module = load(EXAMPLES / "mnist_buggy.py", "buggy_mnist")
    steps, _, validation, _, order_warnings = run_mnist(module, monkeypatch)
    assert steps.stale > 0
    assert all(train and grad for train, grad in validation)
    assert order_warnings


def run_gan(module, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # the script saves samples in its working directory
    torch.manual_seed(0)
    loader = DataLoader(TensorDataset(torch.randn(8, 3, 8, 8), torch.zeros(8)), batch_size=4)
    calls = record_modes(module.Generator, monkeypatch)
    with Steps() as steps:
        module.train(loader, epochs=2, nz=16)
    return steps, calls


def test_fixed_gan_trains_and_its_bugs_are_gone(tmp_path, monkeypatch):
    module = load(fixed_copy(tmp_path, "gan_buggy.py"), "fixed_gan")
    steps, calls = run_gan(module, monkeypatch, tmp_path)
    assert steps.steps == 8 and steps.stale == 0  # TL001: the generator's optimizer is cleared too
    assert all(train for train, grad in calls if grad)  # TL007: trains in training mode after sampling
    discriminator = module.Discriminator()
    assert not isinstance(list(discriminator.main)[-1], torch.nn.Sigmoid)  # TL020: logits for the loss


def test_unfixed_gan_shows_the_bugs(tmp_path, monkeypatch):
    module = load(EXAMPLES / "gan_buggy.py", "buggy_gan")
    steps, calls = run_gan(module, monkeypatch, tmp_path)
    assert steps.stale > 0
    assert not all(train for train, grad in calls if grad)


def run_vit(module):
    torch.manual_seed(0)
    model = module.TinyViT(dim=32, depth=2, classes=5)
    loader = DataLoader(TensorDataset(torch.randn(8, 4, 48), torch.randint(0, 5, (8,))), batch_size=2)
    with Steps() as steps, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CUDA autocast and GradScaler switch themselves off on the CPU
        module.train(model, loader, epochs=1, accum_steps=2, device="cpu")
    return model, steps


def test_fixed_amp_vit_trains_and_its_bugs_are_gone(tmp_path):
    module = load(fixed_copy(tmp_path, "amp_accumulation_buggy.py"), "fixed_vit")
    model, steps = run_vit(module)  # TL008: the permuted view no longer raises
    assert steps.steps == 2 and steps.stale == 0
    assert any(name.startswith("blocks.") for name, _ in model.named_parameters())  # TL013: registered
    model.eval()
    x = torch.randn(2, 4, 48)
    assert torch.equal(model(x), model(x))  # TL011: no dropout in eval mode


def test_unfixed_amp_vit_fails(tmp_path):
    module = load(EXAMPLES / "amp_accumulation_buggy.py", "buggy_vit")
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        run_vit(module)


def test_fixed_ddp_script_compiles_and_keeps_only_unfixable_findings(tmp_path):
    """ddp_buggy.py needs GPUs and NCCL to run; its fixed copy must compile and keep only the
    findings that have no fix."""
    path = fixed_copy(tmp_path, "ddp_buggy.py")
    run = subprocess.run([sys.executable, "-m", "torchlint", "-q", str(path)], capture_output=True, text=True)
    assert sorted({line.split(": ")[1].split()[0] for line in run.stdout.splitlines()}) == ["TL018", "TL021"]


def fake_torchvision(monkeypatch):
    """The tutorial notebook's torchvision: MNIST is 16 random images, transforms do nothing."""
    stub = types.ModuleType("torchvision")
    stub.transforms = types.SimpleNamespace(
        Compose=lambda steps: None, ToTensor=lambda: None, Normalize=lambda *a: None
    )

    def mnist(root, train=True, download=False, transform=None):
        return TensorDataset(torch.randn(16, 1, 28, 28), torch.randint(0, 10, (16,)))

    stub.datasets = types.SimpleNamespace(MNIST=mnist)
    monkeypatch.setitem(sys.modules, "torchvision", stub)


# Lines that only IPython runs: `!pip ...`, `%matplotlib ...`, `model?`; a `%%time` line.
_IPYTHON_LINE = re.compile(r"^(\s*)([!%].*|\S+\?)$")


def run_notebook(path, monkeypatch):
    """Run a notebook's code cells in order as a kernel would (IPython-only lines skipped),
    watching the optimizer steps and every forward of the model; the cells' namespace."""
    fake_torchvision(monkeypatch)
    torch.manual_seed(0)
    namespace = {"__name__": "__main__"}
    calls = None
    with Steps() as steps, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] != "code":
                continue
            lines = "".join(cell["source"]).split("\n")
            code = "\n".join(_IPYTHON_LINE.sub(r"\1pass", line) for line in lines)
            exec(compile(code, str(path), "exec"), namespace)
            if "Net" in namespace and calls is None:
                calls = record_modes(namespace["Net"], monkeypatch)
    return namespace, steps, calls


def test_fixed_tutorial_notebook_trains_and_its_bugs_are_gone(tmp_path, monkeypatch):
    namespace, steps, calls = run_notebook(fixed_copy(tmp_path, "mnist_tutorial_buggy.ipynb"), monkeypatch)
    assert steps.steps == 3 and steps.stale == 0  # TL001: cleared every iteration
    assert isinstance(namespace["running_loss"], float)  # TL010: a number, not a graph
    training, evaluation = calls[:3], calls[3:]
    assert training == [(True, True)] * 3
    assert evaluation == [(False, False)]  # TL005, TL006
    model, x = namespace["model"], torch.randn(2, 1, 28, 28)
    assert torch.equal(model(x), model(x))  # TL011: no dropout in eval mode
    assert not torch.allclose(model(x).sum(dim=1), torch.ones(2))  # TL012: logits for the loss


def test_unfixed_tutorial_notebook_shows_the_bugs(tmp_path, monkeypatch):
    path = tmp_path / "nb.ipynb"
    shutil.copy(EXAMPLES / "mnist_tutorial_buggy.ipynb", path)
    namespace, steps, calls = run_notebook(path, monkeypatch)
    assert steps.stale > 0
    assert isinstance(namespace["running_loss"], torch.Tensor)
    assert calls[3:] == [(True, True)]
