"""TS101 autograd-anomaly: anomaly mode, and failures pinned to the user's forward line.

With ``torch.autograd.set_detect_anomaly(True)`` autograd records the Python
stack of every forward op and, when a backward node fails (an in-place
modification of a saved tensor, NaN produced with ``check_nan``...), prints
that stack as a UserWarning.  We capture that warning around each backward,
keep the user's frames, and report the finding at the user line that created
the failing op.  Other warnings raised during backward are replayed unchanged.
"""

from __future__ import annotations

import re
import warnings

import torch

from .check import BackwardEvent, Check
from .findings import SanitizerError
from .locations import user_frames_from_traceback

_FORWARD_TRACE_MARK = "Traceback of forward call that caused the error"
_NODE_NAME = re.compile(r"Error detected in (\w+)")


class AnomalyCheck(Check):
    codes = {"TS101": "autograd-anomaly"}

    @classmethod
    def enabled(cls, options) -> bool:
        return bool(options.anomaly)

    def install(self) -> None:
        self._previous = (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())
        torch.autograd.set_detect_anomaly(True, check_nan=bool(self.options.check_nan))
        self._replay_registry: dict = {}

    def uninstall(self) -> None:
        enabled, check_nan = self._previous
        torch.autograd.set_detect_anomaly(enabled, check_nan=check_nan)

    def around_backward(self, call, event: BackwardEvent):
        failure = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = call()
            except SanitizerError:
                raise
            except RuntimeError as exc:
                failure = exc
        forward_trace = None
        for item in caught:
            text = str(item.message)
            if forward_trace is None and _FORWARD_TRACE_MARK in text:
                forward_trace = text
                continue
            warnings.warn_explicit(
                item.message, item.category, item.filename, item.lineno, registry=self._replay_registry
            )
        if failure is None:
            return result
        if forward_trace is not None:
            try:
                self._report(failure, forward_trace, event)
            except SanitizerError as error:
                raise error from failure
        raise failure

    def _report(self, failure: RuntimeError, trace: str, event: BackwardEvent) -> None:
        frames = user_frames_from_traceback(trace)
        node = _NODE_NAME.search(trace)
        node_name = node.group(1) if node else "a backward node"
        error = str(failure).strip().splitlines()[0] if str(failure).strip() else type(failure).__name__
        if frames:
            location, source = frames[-1]
            where = f"the op was created here in the forward pass{': ' + source if source else ''}"
        else:
            location, source = event.location, ""
            where = "no user frame in the forward stack"
        message = f"backward failed in {node_name}: {error} -- {where}; backward() was called at {event.location}"
        details = {
            "node": node_name,
            "error": error,
            "backward_location": str(event.location),
            "forward_stack": [f"{loc.filename}:{loc.lineno} in {loc.function}: {src}" for loc, src in frames],
        }
        self.emit("TS101", message, details, location)
