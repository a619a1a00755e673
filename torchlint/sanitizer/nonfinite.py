"""TS104 nonfinite-input: NaN/Inf entering the root model, entering a loss, and in the loss.

What counts:

* NaN or +Inf in a floating tensor entering the root model.  ``-inf`` alone is
  how masks are written (``nn.Transformer.generate_square_subsequent_mask()``,
  ``scores.masked_fill(mask, float("-inf"))``): an input whose only non-finite
  values are ``-inf`` is reported only when the model's output is not finite.
* A loss that comes out NaN/Inf: its input or target is blamed when one of them
  is not finite, else the loss itself.  Arguments of a finite loss are fine
  (``-inf``-masked logits into ``cross_entropy``).
* One event is counted once: within one forward pass of the root model, a NaN
  that was reported where it entered the model is not counted again where it
  reaches the loss, and NaN outputs of a model whose weights are already
  non-finite are the consequence of the update that wrote them (TS111), not new
  events.

Floating and complex tensors are judged on the values this process can read
(values.readable: this rank's shard of a DTensor, a sparse tensor's stored
values, a nested tensor's values); tensors without any (meta, fake, inside a
torch.func transform) are skipped, integer and bool ones cannot hold NaN.

CPU tensors are checked on the spot: one ``sum()`` per tensor (NaN and Inf
propagate through a sum; a sum of ``-inf`` and finite values is ``-inf``), and
an exact count only when that sum is not finite.  Tensors on accelerators
(``options.accelerator_devices``, CUDA by default) must not force a host sync
per call, so their sums are queued on the device and read back together, with
one synchronisation, at the next optimizer step (or when the queue fills up, or
at session exit), then judged by the same rules.  The queue keeps weak
references only, so it never extends the life of activations; a tensor freed
before the sync is reported without element counts.
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
from .tensors import describe, iter_tensors, output_tensors
from .values import can_be_nonfinite, finite_sum, host_values, readable

# Queue entries are a device scalar and a weak reference each, so a long
# gradient-accumulation cycle fits before the queue forces an early sync.
_MAX_PENDING = 1024
_MAX_OUTPUTS = 4  # output tensors of a root call that judge its -inf inputs


def _judged(value) -> torch.Tensor | None:
    """The values TS104 judges in ``value``: those of a non-empty floating or
    complex tensor that this process can read (see values.readable), else None."""
    if not isinstance(value, torch.Tensor) or not can_be_nonfinite(value):
        return None
    values = readable(value)
    if values is None or not values.numel():
        return None
    return values


def _has_values(value) -> bool:
    return _judged(value) is not None


def _output_values(output) -> list[torch.Tensor]:
    """The values of the first output tensors of a root call that TS104 judges."""
    return [_judged(t) for t in output_tensors(output, _has_values, _MAX_OUTPUTS)]


def _stored(tensor: torch.Tensor) -> str:
    """The word " stored" for a sparse tensor, whose counts are of its stored values."""
    return " stored" if tensor.layout is not torch.strided and not tensor.is_nested else ""


def _finite(values: torch.Tensor) -> bool:
    """Immediate check (CPU): one op for a real scalar, a sum otherwise."""
    if values.numel() == 1 and not values.is_complex():
        return math.isfinite(values.item())  # a scalar loss: one op, no graph
    return math.isfinite(float(finite_sum(values)))


class _Entry:
    """One tensor to judge: its sum (a device scalar until the sync), and what to say."""

    __slots__ = ("sum", "ref", "what", "location", "details", "forward_pass")

    def __init__(self, total, tensor, what, location, details, forward_pass):
        self.sum = total
        self.ref = weakref.ref(tensor)
        self.what = what
        self.location = location
        self.details = details
        self.forward_pass = forward_pass


class _Call:
    """A root-model call or a loss call whose entries are judged together."""

    __slots__ = ("entries", "referee", "kind", "model")

    def __init__(self, kind: str, model=None):
        self.kind = kind  # "model" or "loss"
        self.entries: list[_Entry] = []
        self.referee: list[torch.Tensor] = []  # sums of the outputs, or of the loss
        self.model = model  # weak reference to the root model (a loss: the latest one)


class NonfiniteCheck(Check):
    codes = {"TS104": "nonfinite-input"}

    @classmethod
    def enabled(cls, options) -> bool:
        return bool(options.nonfinite)

    def install(self) -> None:
        self._deferred_types = frozenset(self.options.accelerator_devices)
        self._pending: list[_Call] = []  # calls waiting for one batched sync (accelerators)
        self._queued = 0
        self._masks: _Call | None = None  # CPU: a root call's -inf inputs, judged by its output
        self._last_loss_id: int | None = None
        self._forward_pass = 0
        self._counted: dict[tuple[str, int], int] = {}  # location -> forward pass it was counted in
        self._input_reported_in = -1  # forward pass in which a model input was reported
        self._model: weakref.ref | None = None
        self._poisoned: set[int] = set()  # root models found with non-finite weights
        self._open_loss: _Call | None = None  # accelerators: the loss call between its pre and post
        # An earlier finding (TS104, or TS111 at a step) explains weights that became non-finite.
        self._nonfinite_explained = False
        #: how many host syncs the batched path made (observable by tests/benchmarks)
        self.syncs = 0

    # -- events ---------------------------------------------------------------
    def on_root_pre(self, module, args) -> None:
        if isinstance(module, _Loss) or not args:
            return  # loss modules are checked at the functional loss they call
        self._forward_pass += 1
        self._model = weakref.ref(module)
        call = None
        name = None
        for path, tensor in iter_tensors(args):
            values = _judged(tensor)
            if values is None:
                continue
            if name is None:
                name = self.session.module_name(module)
            what, details = f"{describe(path)} of {name}", {"module": name, "argument": describe(path)}
            if tensor.device.type in self._deferred_types:
                call = call or self._queue_call("model", module)
                self._queue(call, tensor, values, what, details)
                continue
            total = float(finite_sum(values))
            if total == -math.inf:  # -inf and finite values only: a mask, unless the output says otherwise
                if self._masks is None:
                    self._masks = _Call("model", weakref.ref(module))
                self._masks.entries.append(
                    _Entry(total, tensor, what, self.session.model_call_location(), details, self._forward_pass)
                )
            elif not math.isfinite(total):
                self._report(tensor, what, details, None, model_input=True)

    def on_root_post(self, module, args, kwargs, output) -> None:
        masks = self._masks
        if masks is not None and masks.model() is module:
            self._masks = None
            if not all(math.isfinite(float(finite_sum(v))) for v in _output_values(output)):
                for entry in masks.entries:
                    self._report(entry.ref(), entry.what, entry.details, entry.location, model_input=True)
        if self._pending and self._pending[-1].kind == "model" and self._pending[-1].model() is module:
            call = self._pending[-1]
            if not call.referee:
                call.referee = [finite_sum(v) for v in _output_values(output)]

    def on_loss_pre(self, fn_name, input, target) -> None:
        # On accelerators the arguments are queued now (no sync), to be judged
        # with the loss.  On the CPU they are examined only if the loss comes out
        # non-finite (on_loss_post).
        judged = [(argument, value, _judged(value)) for argument, value in (("input", input), ("target", target))]
        if not any(values is not None and value.device.type in self._deferred_types for _, value, values in judged):
            return
        call = self._open_loss = self._queue_call("loss", self._model)
        for argument, value, values in judged:
            if values is not None:
                what, details = f"the {argument} of {fn_name}", {"loss": fn_name, "argument": argument}
                self._queue(call, value, values, what, details)

    def on_loss_post(self, fn_name, input, target, loss) -> None:
        values = _judged(loss)
        if values is None:
            return
        self._last_loss_id = id(loss)
        if loss.device.type in self._deferred_types:
            call, self._open_loss = self._open_loss, None
            if call is None or call not in self._pending:
                call = self._queue_call("loss", self._model)
            call.referee = [finite_sum(values)]
            what, details = f"the loss returned by {fn_name}", {"loss": fn_name, "argument": "loss"}
            self._queue(call, loss, values, what, details)
            return
        if _finite(values):
            return
        blamed = False
        for argument, value in (("input", input), ("target", target)):
            argument_values = _judged(value)
            if (
                argument_values is not None
                and value.device.type not in self._deferred_types
                and not _finite(argument_values)
            ):
                self._report(value, f"the {argument} of {fn_name}", {"loss": fn_name, "argument": argument}, None)
                blamed = True
        if not blamed:
            self._report(loss, f"the loss returned by {fn_name}", {"loss": fn_name, "argument": "loss"}, None)

    def on_backward(self, event: BackwardEvent) -> None:
        for tensor in event.tensors:
            if id(tensor) == self._last_loss_id:
                continue  # already checked where the loss function returned it
            values = _judged(tensor)
            if values is None:
                continue  # no values: an integer tensor, or no data (meta, fake...)
            what, details = "the loss passed to backward()", {"argument": "loss"}
            if tensor.device.type in self._deferred_types:
                call = self._queue_call("loss", self._model)
                self._queue(call, tensor, values, what, details, event.location)
                call.referee = [call.entries[-1].sum]  # the loss judges itself
            elif not _finite(values):
                self._report(tensor, what, details, event.location)
        # What the next loss carries is a new event, also in loops without a root model.
        self._forward_pass += 1

    def on_finding(self, finding) -> None:
        if finding.code == "TS111" and (finding.details.get("nan") or finding.details.get("inf")):
            self._nonfinite_explained = True

    def on_optimizer_pre_step(self, optimizer, args, kwargs) -> None:
        if self._pending:
            self.flush()

    def finish(self) -> None:
        if self._pending:
            self.flush()

    # -- the batched path (accelerators) ------------------------------------------
    def _queue_call(self, kind: str, model) -> _Call:
        call = _Call(kind, model if isinstance(model, weakref.ref) or model is None else weakref.ref(model))
        self._pending.append(call)
        return call

    def _queue(self, call: _Call, tensor, values, what: str, details: dict, location: Location | None = None) -> None:
        if location is None:
            location = self.session.model_call_location() if call.kind == "model" else user_location(sys._getframe(2))
        call.entries.append(_Entry(finite_sum(values), tensor, what, location, details, self._forward_pass))
        self._queued += 1
        if self._queued >= _MAX_PENDING:
            self.flush()

    def flush(self) -> None:
        """Read all queued device-side sums back with a single host sync per device, and judge them."""
        pending, self._pending, self._queued = self._pending, [], 0
        sums = [s for call in pending for s in (*(e.sum for e in call.entries), *call.referee)]
        self.syncs += len({total.device for total in sums})  # host_values reads one device per sync
        values = {id(total): value for total, value in zip(sums, host_values([t.float() for t in sums]))}
        for call in pending:
            referee_finite = bool(call.referee) and all(math.isfinite(values[id(s)]) for s in call.referee)
            if call.kind == "loss":
                if referee_finite:
                    continue  # a finite loss: its arguments (masked logits...) did no harm
                bad = [e for e in call.entries if not math.isfinite(values[id(e.sum)])]
                blamed = [e for e in bad if e.details.get("argument") != "loss"] or bad
                for entry in blamed:
                    self._report(
                        entry.ref(), entry.what, entry.details, entry.location, forward_pass=entry.forward_pass
                    )
                continue
            for entry in call.entries:
                value = values[id(entry.sum)]
                if math.isfinite(value) or (value == -math.inf and referee_finite):
                    continue
                self._report(
                    entry.ref(),
                    entry.what,
                    entry.details,
                    entry.location,
                    model_input=True,
                    forward_pass=entry.forward_pass,
                )

    # -- reporting --------------------------------------------------------------
    def _weights_nonfinite(self) -> bool:
        """Whether the latest root model's parameters hold NaN/Inf (only asked on the NaN path)."""
        model = self._model() if self._model is not None else None
        if model is None:
            return False
        if id(model) in self._poisoned:
            return True
        params = [values for values in map(_judged, model.parameters()) if values is not None]
        if params and not all(map(math.isfinite, host_values([finite_sum(values) for values in params]))):
            self._poisoned.add(id(model))
            return True
        return False

    def _report(
        self,
        tensor: torch.Tensor | None,
        what: str,
        details: dict,
        location: Location | None,
        model_input: bool = False,
        forward_pass: int | None = None,
    ) -> None:
        forward_pass = self._forward_pass if forward_pass is None else forward_pass
        if not model_input:
            if self._input_reported_in == forward_pass:
                return  # the NaN that entered the model, counted there, reaching the loss
            if self._weights_nonfinite():
                if self._nonfinite_explained:
                    return  # a consequence of the update that wrote NaN into the weights
                what += " (the model's parameters are already non-finite)"
        if location is None:
            location = user_location(sys._getframe(2))
        key = (location.filename, location.lineno)
        if self._counted.get(key) == forward_pass:
            return  # one event, counted once
        self._counted[key] = forward_pass
        self._nonfinite_explained = True
        if model_input:
            self._input_reported_in = forward_pass
        if tensor is None:  # batched check: the tensor was freed before the sync, its sum was not finite
            message = (
                f"{what} contained NaN or Inf values (freed before the batched check, so not counted); "
                f"find where they come from before they reach the weights"
            )
            self.emit("TS104", message, {**details, "nan": None, "inf": None, "numel": None}, location)
            return
        data = _judged(tensor)
        if data is None:
            return
        nan = int(torch.isnan(data).sum())
        inf = int(torch.isinf(data).sum())
        if nan + inf == 0:
            return  # the sum overflowed but every element is finite
        parts = [f"{nan} NaN"] if nan else []
        if inf:
            parts.append(f"{inf} Inf")
        message = (
            f"{what} contains {' and '.join(parts)} of {data.numel()}{_stored(tensor)} elements; "
            f"find where they come from (bad sample, log(0), division by zero, too high a learning rate) "
            f"before they reach the weights"
        )
        self.emit("TS104", message, {**details, "nan": nan, "inf": inf, "numel": data.numel()}, location)
