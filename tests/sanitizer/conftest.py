"""Shared helpers for the sanitizer tests: tiny real models trained on the CPU."""

from __future__ import annotations

import inspect
import warnings

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional


class Net(nn.Module):
    """encoder -> head, so module paths look like ``model.encoder.0``."""

    def __init__(self, features: int = 8, hidden: int = 16, classes: int = 3):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(features, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.head(self.encoder(x))


@pytest.fixture
def net():
    torch.manual_seed(0)
    return Net()


@pytest.fixture
def batches():
    generator = torch.Generator().manual_seed(1)
    return [
        (torch.randn(16, 8, generator=generator), torch.randint(0, 3, (16,), generator=generator)) for _ in range(4)
    ]


@pytest.fixture
def quiet():
    """Options that keep a test focused on the sanitizer core checks (TS101-TS105)."""
    return {"summary": False, "action": "record", "training_checks": False}


def line_of(marker: str, function=None) -> int:
    """The line number of the source line carrying ``# <marker>`` in the caller's file."""
    frame = inspect.currentframe().f_back
    with open(frame.f_code.co_filename, encoding="utf-8") as source:
        lines = source.read().splitlines()
    hits = [i + 1 for i, text in enumerate(lines) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, f"marker {marker!r} found {len(hits)} times"
    return hits[0]


@pytest.fixture
def global_state():
    """A function returning everything a session may touch, in comparable form."""
    return snapshot_global_state


def snapshot_global_state():
    import torch.nn.modules.module as module_hooks
    import torch.optim.optimizer as optimizer_hooks

    return {
        "anomaly": torch.is_anomaly_enabled(),
        "anomaly_check_nan": torch.is_anomaly_check_nan_enabled(),
        "grad": torch.is_grad_enabled(),
        "module_pre_hooks": list(module_hooks._global_forward_pre_hooks),
        "module_hooks": list(module_hooks._global_forward_hooks),
        "module_hooks_with_kwargs": list(module_hooks._global_forward_hooks_with_kwargs),
        "module_hooks_always_called": list(module_hooks._global_forward_hooks_always_called),
        "optimizer_pre_hooks": list(optimizer_hooks._global_optimizer_pre_hooks),
        "optimizer_post_hooks": list(optimizer_hooks._global_optimizer_post_hooks),
        "backward": torch.autograd.backward,
        "grad_fn": torch.autograd.grad,
        "zero_grad": torch.optim.Optimizer.zero_grad,
        "cross_entropy": F.cross_entropy,
        "mse_loss": F.mse_loss,
        "function_modes": torch._C._len_torch_function_stack(),
        "saved_tensor_hooks": torch._C._autograd._top_saved_tensors_default_hooks(False),
        "disable_saved_tensors_hooks": torch.autograd.graph.disable_saved_tensors_hooks,
        "warning_filters": list(warnings.filters),
    }


@pytest.fixture
def mark():
    return line_of


@pytest.fixture(autouse=True)
def strict_sanitizer(monkeypatch):
    """In tests an internal error of a check fails loudly instead of switching the check off."""
    monkeypatch.setenv("TORCHLINT_SANITIZER_STRICT", "1")
