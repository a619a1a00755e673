"""Gradient health at the optimizer step (TS111): one fused norm per step.

On accelerators ``torch._foreach_norm`` computes every parameter's gradient
norm in one call and the total is read back with a single ``.item()`` (the one
host sync per step that the sanitizer allows itself); on the CPU, BLAS dot
products are cheaper.  NaN and Inf propagate into the total, so a finite total
proves every gradient finite; only when it is not do we look at each gradient
to name the culprits.
"""

from __future__ import annotations

import math
from collections import deque
from statistics import median

import torch

from .values import host_values

#: How many recent total norms form the baseline of the explosion test, and
#: how many are needed before it is trusted.
HISTORY = 50
MIN_HISTORY = 5


class NormCheck:
    """Outcome of one step's check: non-finite parameters, or an explosion."""

    __slots__ = ("nan", "inf", "total", "baseline")

    def __init__(self, nan=(), inf=(), total=0.0, baseline=None):
        self.nan = list(nan)  # indices into the checked gradient list
        self.inf = list(inf)
        self.total = total
        self.baseline = baseline  # running median, set when the total exploded


def _foreach_norm(grads: list[torch.Tensor], dtype: torch.dtype) -> list[torch.Tensor]:
    try:
        return list(torch._foreach_norm(grads, 2, dtype=dtype))
    except TypeError:  # torch < 2.3: no dtype argument
        return [n.to(dtype) for n in torch._foreach_norm(grads, 2)]


def _norms(grads: list[torch.Tensor]) -> list[torch.Tensor]:
    # Half-precision norms overflow early; compute them in float32 (or float64).
    dtype = torch.float64 if any(g.dtype == torch.float64 for g in grads) else torch.float32
    devices = {g.device for g in grads}
    if len(devices) == 1:
        return _foreach_norm(grads, dtype)
    # foreach kernels want one device per call; keep the original order.
    out: list[torch.Tensor | None] = [None] * len(grads)
    for device in devices:
        idx = [i for i, g in enumerate(grads) if g.device == device]
        for i, n in zip(idx, _foreach_norm([grads[i] for i in idx], dtype)):
            out[i] = n.to(grads[0].device)
    return out  # type: ignore[return-value]


_CPU_DOT_DTYPES = (torch.float32, torch.float64)
_MAX_DOTS = 32


def _total_norm(grads: list[torch.Tensor]) -> float:
    """The 2-norm of all gradients together (NaN/Inf when any is non-finite)."""
    if len(grads) <= _MAX_DOTS and all(g.device.type == "cpu" and g.dtype in _CPU_DOT_DTYPES for g in grads):
        # On the CPU, BLAS dot products beat _foreach_norm on a few large
        # tensors (not on many small ones: each call has its overhead), and
        # reading each result costs no device sync.
        squares = 0.0
        for g in grads:
            flat = g.view(-1) if g.is_contiguous() else g.reshape(-1)
            squares += float(torch.dot(flat, flat))
        return math.sqrt(squares) if squares >= 0 else squares  # NaN stays NaN
    # Accelerators: one fused kernel, one host sync.
    return float(torch.linalg.vector_norm(torch.stack(_norms(grads))))


def _nonfinite(grads: list[torch.Tensor]) -> tuple[list[int], list[int]]:
    """Indices of the gradients holding NaN, and of those holding Inf."""
    flags = host_values([g.isnan().any() for g in grads] + [g.isinf().any() for g in grads])
    nan, inf = flags[: len(grads)], flags[len(grads) :]
    return [i for i, flag in enumerate(nan) if flag], [i for i, flag in enumerate(inf) if flag]


class GradNormMonitor:
    """Running statistics of one optimizer's total gradient norm."""

    def __init__(self, explosion_factor: float):
        self.factor = float(explosion_factor)
        self.history: deque[float] = deque(maxlen=HISTORY)

    def check(self, grads: list[torch.Tensor]) -> NormCheck | None:
        """None when the gradients look healthy; ``grads`` are their readable
        values as real tensors (values.real_values: this rank's shard of a
        DTensor, the values of a sparse gradient)."""
        if not grads:
            return None
        total = _total_norm(grads)
        if not math.isfinite(total):
            nan, inf = _nonfinite(grads)
            if nan or inf:
                return NormCheck(nan=nan, inf=inf, total=total)
            # Finite gradients whose squared norm overflowed float32.
            total = float(torch.linalg.vector_norm(torch.stack(_norms(grads)).double()))
        result = None
        if len(self.history) >= MIN_HISTORY and self.factor > 0:
            baseline = median(self.history)
            if baseline > 0 and total > self.factor * baseline:
                result = NormCheck(total=total, baseline=baseline)
        self.history.append(total)
        return result
