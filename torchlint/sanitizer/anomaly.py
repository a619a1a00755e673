"""TS101 autograd-anomaly: the forward line of a failing backward, and of the op
whose backward turned finite gradients into NaN/Inf.

``anomaly="auto"`` (the default) keeps torch's anomaly mode on with a cheap
stack recorder (:mod:`.forward_lines`): every autograd node remembers the
user's line that created it, for a fraction of anomaly mode's cost.  Then:

* **a backward that raises** (an in-place version error, a shape error, a
  custom ``Function`` raising) is reported at the forward line of the failing
  node: torch names that node while anomaly mode is on; otherwise it is found
  in the graph from the error (:func:`.autograd_graph.failing_nodes`).  The
  user's own exception is re-raised, with that line attached as a note.
* **non-finite gradients** (a TS111 finding at the optimizer step, or TS113's
  collapsing loss scale) arm an *escalation*: for the next
  ``anomaly_escalation`` backward passes torch's full stacks are recorded and
  each backward is watched node by node (:class:`.autograd_graph.NanWatch`,
  what ``check_nan`` does, without raising); the first node producing NaN/Inf
  from finite gradients is reported with its line and full forward stack, and
  the finding says on which backward pass it was pinned.  A pass whose loss is
  already non-finite (the data, or weights an earlier update made NaN) cannot
  show where backward creates them and is skipped.

``anomaly="full"`` records torch's full stacks and watches every backward
(``check_nan``); ``anomaly=False`` does neither.  No mode ever raises for a NaN:
with ``action="warn"`` the run goes on exactly as without the sanitizer.
"""

from __future__ import annotations

import re
import warnings

import torch

from . import warning_locations
from .autograd_graph import NanWatch, all_finite, failing_nodes, graph_roots
from .check import BackwardEvent, Check
from .findings import Finding, Location
from .forward_lines import StackRecorder, forward_location
from .locations import user_frames_from_traceback
from .values import readable

_FORWARD_TRACE_MARK = "Traceback of forward call that caused the error"
_NODE_NAME = re.compile(r"Error detected in (\w+)")
#: Findings that mean "gradients became non-finite": they arm the escalation.
_NONFINITE_GRADIENT_CODES = ("TS111", "TS113")
#: Findings that mean "the forward pass itself carried NaN/Inf this step".
_NONFINITE_FORWARD_CODES = ("TS104",)
#: A node's recorded stack is shown up to this many user frames.
_MAX_FRAMES = 12


def _first_line(error: BaseException) -> str:
    """The error's first line, without torch's hint about enabling anomaly mode."""
    text = str(error).strip()
    first = text.splitlines()[0] if text else type(error).__name__
    return first.split(" Hint: ", 1)[0]


def _frames_text(frames: list[tuple[Location, str]]) -> list[str]:
    return [f"{loc.filename}:{loc.lineno} in {loc.function}: {src}" for loc, src in frames[-_MAX_FRAMES:]]


class _Escalation:
    """Full anomaly mode for a bounded number of backward passes after non-finite gradients."""

    __slots__ = ("trigger", "first_pass", "passes_left", "skipped")

    def __init__(self, trigger: Finding, first_pass: int, passes: int):
        self.trigger = trigger
        self.first_pass = first_pass  # the backward pass whose gradients were non-finite
        self.passes_left = passes
        self.skipped = 0  # watched passes whose loss was already non-finite


class AnomalyCheck(Check):
    codes = {"TS101": "autograd-anomaly"}
    option_defaults = {"anomaly_escalation": 10}

    @classmethod
    def enabled(cls, options) -> bool:
        return bool(options.anomaly)

    def install(self) -> None:
        self.full = self.options.anomaly == "full"
        self.check_nan = bool(self.options.check_nan)
        self._previous = (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())
        self.recorder = StackRecorder(full=self.full)
        self.recorder.start()
        # check_nan stays off: torch's check raises in the middle of backward, which
        # would end a run that plain Python finishes.  NanWatch does its job instead.
        torch.autograd.set_detect_anomaly(True, check_nan=False)
        if not self.recorder.works():
            self.recorder.set_full(True)
            self.session.note(
                "this torch version records anomaly-mode stacks another way: anomaly='auto' runs torch's "
                "full anomaly mode (slower, same findings)"
            )
        self.backward_passes = 0
        self.escalation: _Escalation | None = None
        self._escalated_for: set[tuple] = set()  # trigger locations already escalated once
        self._forward_nonfinite_at = -1  # backward pass count when TS104 last fired
        # torch prints a failing node's recorded stack as a warning: take it (the
        # session restores the filters) instead of catching warnings around every
        # backward, which would reset everybody's "once per location" memory.
        self._trace: str | None = None
        warnings.filterwarnings("always", message=r"Error detected in \w+\. Traceback of forward call")
        warning_locations.interceptors.append(self._take_trace)

    def uninstall(self) -> None:
        if self._take_trace in warning_locations.interceptors:
            warning_locations.interceptors.remove(self._take_trace)
        self.recorder.stop()
        enabled, check_nan = self._previous
        torch.autograd.set_detect_anomaly(enabled, check_nan=check_nan)

    def finish(self) -> None:
        if self.escalation is not None:
            self._give_up("the run ended first")

    # -- escalation -----------------------------------------------------------------
    def on_finding(self, finding: Finding) -> None:
        if finding.code in _NONFINITE_FORWARD_CODES:
            # Seen in the forward pass (or at backward()) of the coming backward pass.
            self._forward_nonfinite_at = self.backward_passes + 1
            return
        if finding.code not in _NONFINITE_GRADIENT_CODES or not self.check_nan or self.full:
            return
        if finding.code == "TS111" and not (finding.details.get("nan") or finding.details.get("inf")):
            return  # an exploding but finite norm
        if self._forward_nonfinite_at >= self.backward_passes:
            return  # this step's loss was already non-finite: TS104 names the source
        trigger = (finding.code, finding.filename, finding.lineno)
        if self.escalation is None and trigger not in self._escalated_for:
            # Once per place: a run whose every step is non-finite must not stay escalated.
            self._escalated_for.add(trigger)
            passes = max(1, int(self.options.anomaly_escalation))
            self.escalation = _Escalation(finding, self.backward_passes, passes)
            self.recorder.set_full(True)

    def _end_escalation(self) -> None:
        self.escalation = None
        self.recorder.set_full(self.full)

    def _give_up(self, why: str) -> None:
        escalation = self.escalation
        trigger = escalation.trigger
        detail = (
            f"; {escalation.skipped} of them already had a non-finite loss (NaN data, or weights an earlier "
            f"update made non-finite)"
            if escalation.skipped
            else ""
        )
        self._end_escalation()
        self.session.note(
            f"TS101 could not pin the op that made the non-finite gradients of {trigger.code} at "
            f"{trigger.filename}:{trigger.lineno}: {why}{detail}. Rerun with sanitize(anomaly='full') "
            f"(torchlint run --anomaly full) to catch it on its first occurrence."
        )

    def _watch(self, event: BackwardEvent) -> NanWatch | None:
        if not self.check_nan or (not self.full and self.escalation is None):
            return None
        roots = graph_roots(event.tensors)
        if not roots or any(readable(t) is None for t in event.tensors if isinstance(t, torch.Tensor)):
            return None  # no graph, or no values to watch (a meta or fake loss)
        if self.escalation is not None and not all_finite(event.tensors):
            self.escalation.skipped += 1  # the NaN is already in the loss: nothing to pin here
            return None
        return NanWatch(roots)

    # -- backward -------------------------------------------------------------------
    def _take_trace(self, message: warnings.WarningMessage) -> bool:
        text = str(message.message)
        if _FORWARD_TRACE_MARK not in text:
            return False
        if self._trace is None:
            self._trace = text
        return True

    def around_backward(self, call, event: BackwardEvent):
        self.backward_passes += 1
        watch = self._watch(event)
        self._trace = None
        try:
            result = call()
        except Exception as failure:
            if not getattr(failure, "torchlint_explained", False):
                self._report_failure(failure, self._trace, event)
            raise
        finally:
            self._trace = None
            if watch is not None:
                watch.remove()
        if watch is not None and watch.culprit is not None:
            self._report_nan(watch.culprit, event)
        elif self.escalation is not None:
            self.escalation.passes_left -= 1
            if self.escalation.passes_left <= 0:
                self._give_up(
                    f"the next {int(self.options.anomaly_escalation)} backward passes produced no "
                    f"non-finite gradient from a finite loss"
                )
        return result

    def _report_failure(self, failure: Exception, trace: str | None, event: BackwardEvent) -> None:
        node_name, frames, candidates = None, [], []
        if trace is not None:  # torch named the failing node and printed its recorded stack
            match = _NODE_NAME.search(trace)
            node_name = match.group(1) if match else None
            frames = user_frames_from_traceback(trace.split(_FORWARD_TRACE_MARK, 1)[-1])
        if not frames:
            for node in failing_nodes(graph_roots(event.tensors), failure):
                found = forward_location(node)
                if found is not None:
                    candidates.append((node.name(), found))
            if candidates:
                node_name, (_, _, frames) = candidates[0]
        error = _first_line(failure)
        if frames:
            location, source = frames[-1]
            where = f"the op was created here in the forward pass{': ' + source if source else ''}"
        else:
            location, source = event.location, ""
            where = "no forward line was recorded for it"
        node_name = node_name or "a backward node"
        message = f"backward failed in {node_name}: {error} -- {where}; backward() was called at {event.location}"
        if len(candidates) > 1:
            others = ", ".join(f"{name} at {loc[0]}" for name, loc in candidates[1:6])
            message += f" (other nodes that could have raised it: {others})"
        if "modified by an inplace operation" in error:
            message += (
                ". A tensor that this op saved for backward was modified in place after it was saved; "
                "the in-place check (TS105, on by default on CUDA, sanitize(inplace='always') or "
                "torchlint run --inplace always on the CPU) reports the line of that write"
            )
        details = {
            "node": node_name,
            "error": error,
            "backward_location": str(event.location),
            "forward_stack": _frames_text(frames),
            "candidates": [f"{name} at {loc[0]}" for name, loc in candidates],
        }
        self.emit("TS101", message, details, location, explains=failure)

    def _report_nan(self, node, event: BackwardEvent) -> None:
        escalation = self.escalation
        found = forward_location(node)
        name = node.name()
        if found is not None:
            location, source, frames = found
            where = f"the op was created here in the forward pass{': ' + source if source else ''}"
        else:
            location, source, frames = event.location, "", []
            where = "no forward line was recorded for it"
        message = (
            f"backward of {name} produced NaN/Inf from finite gradients -- {where}; its derivative is not "
            f"finite for these inputs (sqrt/pow/log at 0, division by zero, acos/asin at +-1, overflow); "
            f"backward() was called at {event.location}"
        )
        details = {
            "node": name,
            "backward_location": str(event.location),
            "forward_stack": _frames_text(frames),
            "backward_pass": self.backward_passes,
        }
        if escalation is not None:
            trigger = escalation.trigger
            later = self.backward_passes - escalation.first_pass
            message += (
                f". Pinned on backward pass {self.backward_passes}, {later} "
                f"pass{'es' if later != 1 else ''} after the first non-finite gradients ({trigger.code} at "
                f"{trigger.filename}:{trigger.lineno}, backward pass {escalation.first_pass})"
            )
            details.update(
                first_backward_pass=escalation.first_pass,
                first_seen=f"{trigger.filename}:{trigger.lineno}",
                first_seen_code=trigger.code,
                pinned_later=True,
            )
            self._end_escalation()
        self.emit("TS101", message, details, location)
