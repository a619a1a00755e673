"""Where each autograd node was created: the user's forward line, recorded cheaply.

While anomaly mode is on, torch stores for every autograd node it creates the
Python stack of the forward call, in ``node.metadata["traceback_"]`` (a list of
formatted frames), and prints it when that node fails in backward.  It gets the
stack from ``torch.fx.traceback.format_stack()``, whose full formatting (every
frame of the stack, with its source line) is where almost all of anomaly mode's
cost goes.  While a :class:`StackRecorder` records cheaply, that function returns
only the user's innermost frame, formatted the same way (cached per line), so
the metadata holds the one line that full anomaly mode's stack ends with;
``full`` recording gives torch's own function back.

Compiled regions are left alone: while dynamo or FX traces, torch's own function
runs.
"""

from __future__ import annotations

import linecache
import sys
from types import CodeType

import torch
import torch.fx.traceback as _fx_traceback

from .findings import Location
from .locations import user_frame, user_frames_from_traceback

ANOMALY_TRACE_KEY = "traceback_"

_torch_format_stack = _fx_traceback.format_stack
_full = False  # the active recorder wants torch's full stacks
_calls = 0  # cheap recordings made (tells that torch still calls format_stack)
_lines: dict[tuple[CodeType, int], list[str]] = {}

try:
    _is_compiling = torch.compiler.is_compiling
except AttributeError:  # torch < 2.3

    def _is_compiling() -> bool:
        return False


def _format_stack() -> list[str]:
    """Replacement of ``torch.fx.traceback.format_stack`` while a recorder runs."""
    global _calls
    if _full or getattr(_fx_traceback, "should_preserve_node_meta", False) or _is_compiling():
        return _torch_format_stack()
    _calls += 1
    try:
        caller = sys._getframe(1)
    except ValueError:  # a node made on a thread without Python frames (double backward on CUDA)
        return []
    frame = user_frame(caller)
    if frame is None:
        return []
    key = (frame.f_code, frame.f_lineno)
    lines = _lines.get(key)
    if lines is None:
        code = frame.f_code
        source = linecache.getline(code.co_filename, frame.f_lineno).strip()
        text = f'  File "{code.co_filename}", line {frame.f_lineno}, in {code.co_name}\n'
        lines = _lines[key] = [text + (f"    {source}\n" if source else "")]
    return list(lines)  # a list of its own per node, as torch's function returns


class StackRecorder:
    """Records forward lines for one session; nests (the innermost session's choice rules)."""

    def __init__(self, full: bool = False):
        self.full = full
        self._previous: tuple | None = None

    def start(self) -> None:
        global _full
        self._previous = (_fx_traceback.format_stack, _full)
        _fx_traceback.format_stack = _format_stack
        _full = self.full

    def stop(self) -> None:
        global _full
        if self._previous is not None:
            _fx_traceback.format_stack, _full = self._previous
            self._previous = None

    def set_full(self, full: bool) -> None:
        """Switch between the cheap line and torch's full stack (escalation)."""
        global _full
        self.full = _full = full

    @staticmethod
    def works() -> bool:
        """Whether anomaly mode (which must be on) really records through us:
        a future torch may store its stacks some other way."""
        if _full:
            return True
        before = _calls
        probe = torch.ones(1, requires_grad=True)
        with torch.enable_grad():
            probe.mul(2)
        return _calls > before


def forward_trace(node) -> str:
    """The forward stack recorded for an autograd node ('' when none was)."""
    try:
        frames = node.metadata.get(ANOMALY_TRACE_KEY)
    except (AttributeError, RuntimeError):
        return ""
    if not frames:
        return ""
    return "".join(frames) if isinstance(frames, (list, tuple)) else str(frames)


def forward_location(node) -> tuple[Location, str, list[tuple[Location, str]]] | None:
    """``(location, source line, user frames)`` of the user's line that created
    ``node`` in the forward pass, from its recorded stack; None if nothing was recorded."""
    frames = user_frames_from_traceback(forward_trace(node))
    if not frames:
        return None
    location, source = frames[-1]
    return location, source, frames
