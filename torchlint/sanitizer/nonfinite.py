"""TS104 nonfinite-input: NaN/Inf entering the root model, entering a loss, and in the loss.

CPU tensors are checked on the spot: one ``sum()`` per tensor (NaN and Inf
propagate through a sum), and an exact count only when that sum is not finite.
Tensors on accelerators (``options.accelerator_devices``, CUDA by default) must
not force a host sync per call, so their sums are queued on the device and
read back together, with one synchronisation, at the next optimizer step (or
when the queue fills up, or at session exit).  The queue keeps weak references
only, so it never extends the life of activations; a tensor freed before the
sync is reported without element counts.
"""

from __future__ import annotations

import math
import sys
import weakref

import torch
from torch.nn.modules.loss import _Loss

from .check import BackwardEvent, Check
from .findings import Location
from .locations import user_location
from .tensors import describe, iter_tensors

# Queue entries are a device scalar and a weak reference each, so a long
# gradient-accumulation cycle fits before the queue forces an early sync.
_MAX_PENDING = 1024
_LOW_PRECISION = (torch.float16, torch.bfloat16)


def _finite_sum(tensor: torch.Tensor) -> torch.Tensor:
    # Accumulate half precision in float32 so large-but-finite data cannot overflow the sum.
    if tensor.dtype in _LOW_PRECISION:
        return tensor.sum(dtype=torch.float32)
    return tensor.sum()


class NonfiniteCheck(Check):
    codes = {"TS104": "nonfinite-input"}

    @classmethod
    def enabled(cls, options) -> bool:
        return bool(options.nonfinite)

    def install(self) -> None:
        self._deferred_types = frozenset(self.options.accelerator_devices)
        # (device sum, weak ref to the tensor, description, location, details) waiting
        # for one batched sync.  Weak: the queue must not keep activations alive.
        self._pending: list[tuple[torch.Tensor, weakref.ref, str, Location, dict]] = []
        self._last_loss_id: int | None = None
        #: how many host syncs the batched path made (observable by tests/benchmarks)
        self.syncs = 0

    # -- events ---------------------------------------------------------------
    def on_root_pre(self, module, args) -> None:
        if isinstance(module, _Loss) or not args:
            return  # loss modules are checked at the functional loss they call
        name = None
        for path, tensor in iter_tensors(args):
            if tensor.is_floating_point():
                if name is None:
                    name = self.session.module_name(module)
                self._check(tensor, f"{describe(path)} of {name}", {"module": name, "argument": describe(path)})

    def on_loss_pre(self, fn_name, input, target) -> None:
        # On accelerators the arguments are queued now (no sync).  On the CPU
        # they are examined only if the loss comes out non-finite (on_loss_post):
        # a NaN/Inf argument makes the loss non-finite, so nothing is missed that
        # matters, and a correct step saves three ops.
        for argument, value in (("input", input), ("target", target)):
            if self._deferred(value):
                self._check(value, f"the {argument} of {fn_name}", {"loss": fn_name, "argument": argument})

    def on_loss_post(self, fn_name, input, target, loss) -> None:
        if not (isinstance(loss, torch.Tensor) and loss.is_floating_point()) or loss.numel() == 0:
            return
        self._last_loss_id = id(loss)
        what, details = f"the loss returned by {fn_name}", {"loss": fn_name, "argument": "loss"}
        if loss.device.type in self._deferred_types:
            self._check(loss, what, details)
            return
        if self._finite(loss):
            return
        blamed = False
        for argument, value in (("input", input), ("target", target)):
            if (
                isinstance(value, torch.Tensor)
                and value.is_floating_point()
                and value.device.type not in self._deferred_types
                and value.numel()
                and not self._finite(value)
            ):
                self._report(value, f"the {argument} of {fn_name}", {"loss": fn_name, "argument": argument}, None)
                blamed = True
        if not blamed:
            self._report(loss, what, details, None)

    def on_backward(self, event: BackwardEvent) -> None:
        for tensor in event.tensors:
            if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
                continue
            if id(tensor) == self._last_loss_id:
                continue  # already checked where the loss function returned it
            self._check(tensor, "the loss passed to backward()", {"argument": "loss"}, event.location)

    def on_optimizer_pre_step(self, optimizer, args, kwargs) -> None:
        if self._pending:
            self.flush()

    def finish(self) -> None:
        if self._pending:
            self.flush()

    # -- checking -------------------------------------------------------------
    def _deferred(self, value) -> bool:
        return (
            isinstance(value, torch.Tensor) and value.is_floating_point() and value.device.type in self._deferred_types
        )

    @staticmethod
    def _finite(tensor: torch.Tensor) -> bool:
        """Immediate check (CPU): one op for a scalar, a sum otherwise."""
        if tensor.numel() == 1:
            return math.isfinite(tensor.item())  # a scalar loss: one op, no graph
        # detach only when needed: under anomaly mode a graph node would record a stack
        return math.isfinite(_finite_sum(tensor.detach() if tensor.requires_grad else tensor).item())

    def _check(self, tensor: torch.Tensor, what: str, details: dict, location: Location | None = None) -> None:
        if tensor.numel() == 0:
            return
        if tensor.device.type in self._deferred_types:
            if location is None:
                location = user_location(sys._getframe(1))
            self._pending.append((_finite_sum(tensor.detach()), weakref.ref(tensor), what, location, details))
            if len(self._pending) >= _MAX_PENDING:
                self.flush()
            return
        if not self._finite(tensor):
            self._report(tensor, what, details, location)

    def flush(self) -> None:
        """Read all queued device-side sums back with a single host sync."""
        pending, self._pending = self._pending, []
        by_device: dict[torch.device, list] = {}
        for entry in pending:
            by_device.setdefault(entry[0].device, []).append(entry)
        for entries in by_device.values():
            finite = torch.isfinite(torch.stack([entry[0].float() for entry in entries])).tolist()
            self.syncs += 1
            for ok, (_, ref, what, location, details) in zip(finite, entries):
                if not ok:
                    self._report(ref(), what, details, location)

    def _report(self, tensor: torch.Tensor | None, what: str, details: dict, location: Location | None) -> None:
        if tensor is None:  # batched check: the tensor was freed before the sync, its sum was not finite
            message = (
                f"{what} contained NaN or Inf values (freed before the batched check, so not counted); "
                f"find where they come from before they reach the weights"
            )
            self.emit("TS104", message, {**details, "nan": None, "inf": None, "numel": None}, location)
            return
        data = tensor.detach()
        nan = int(torch.isnan(data).sum())
        inf = int(torch.isinf(data).sum())
        if nan + inf == 0:
            return  # the sum overflowed but every element is finite
        parts = [f"{nan} NaN"] if nan else []
        if inf:
            parts.append(f"{inf} Inf")
        message = (
            f"{what} contains {' and '.join(parts)} of {data.numel()} elements; "
            f"find where they come from (bad sample, log(0), division by zero, too high a learning rate) "
            f"before they reach the weights"
        )
        self.emit("TS104", message, {**details, "nan": nan, "inf": inf, "numel": data.numel()}, location)
