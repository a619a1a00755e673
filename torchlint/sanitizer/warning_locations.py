"""Torch's warnings keep their real source location while the sanitizer forwards torch calls.

The sanitizer calls some torch functions on the user's behalf: the patched loss
functions call the original, and the in-place check's ``TorchFunctionMode``
calls every function from its ``__torch_function__``.  A warning torch
attributes to "the caller" (a C++ ``TORCH_WARN``, or
``warnings.warn(..., stacklevel=2)`` in ``torch.nn.functional``) would then name
the sanitizer's file.  While a session runs, Python's warning display hook is
wrapped: a warning attributed to a frame of the sanitizer is issued again at the
frame plain Python would have named (the caller of the torch function the user
called), with that frame's module, registry and filters, and the misplaced
first pass is undone.
"""

from __future__ import annotations

import os
import sys
import warnings
from types import FrameType

from .tracebacks import is_own_file

_OVERRIDES_FILE = os.sep + os.path.join("torch", "overrides.py")
_original_show = None  # Python's display hook, while ours wraps it
_users = 0
#: Callables given each warning before it is shown; one returning True consumes it.
interceptors: list = []


def _misplaced_frame(message: warnings.WarningMessage) -> FrameType | None:
    """The sanitizer's frame the warning was attributed to, on the current stack."""
    if not is_own_file(message.filename):
        return None
    try:
        frame = sys._getframe(2)
    except ValueError:  # shown from a thread without Python frames
        return None
    while frame is not None:
        code = frame.f_code
        if frame.f_lineno == message.lineno and code.co_filename == message.filename:
            return frame
        frame = frame.f_back
    return None


def _outside_sanitizer(frame: FrameType | None) -> FrameType | None:
    while frame is not None and is_own_file(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def _real_caller(frame: FrameType) -> FrameType | None:
    """The frame that called the torch function the sanitizer's frame serves."""
    caller = _outside_sanitizer(frame.f_back)
    if caller is not None and caller.f_code.co_filename.endswith(_OVERRIDES_FILE):
        # A torch function written in Python, dispatched to the function mode:
        # overrides.handle_torch_function was called by the public function
        # itself, whose caller is the one plain Python names.
        public = caller.f_back
        caller = _outside_sanitizer(public.f_back) if public is not None else None
    return caller


def _show(message: warnings.WarningMessage) -> None:
    original = _original_show or warnings._showwarnmsg_impl
    for intercept in interceptors:
        if intercept(message):
            return
    frame = _misplaced_frame(message)
    caller = _real_caller(frame) if frame is not None else None
    if caller is None:
        original(message)
        return
    # Undo the registry entries the misplaced first pass made, then warn again
    # from the right place (filters and "once per location" apply there).
    text, category = str(message.message), message.category
    misplaced = frame.f_globals.get("__warningregistry__")
    if isinstance(misplaced, dict):
        misplaced.pop((text, category, message.lineno), None)
        misplaced.pop((text, category, 0), None)
    warnings.onceregistry.pop((text, category), None)
    module_globals = caller.f_globals
    warnings.warn_explicit(
        message.message,
        category,
        caller.f_code.co_filename,
        caller.f_lineno,
        module=module_globals.get("__name__", "<string>"),
        registry=module_globals.setdefault("__warningregistry__", {}),
        module_globals=module_globals,
        source=message.source,
    )


def install() -> None:
    """Start rerouting (reference counted: nested sessions)."""
    global _users, _original_show
    if _users == 0:
        _original_show = warnings._showwarnmsg
        warnings._showwarnmsg = _show
    _users += 1


def uninstall() -> None:
    global _users, _original_show
    if _users == 0:
        return
    _users -= 1
    if _users == 0:
        if warnings._showwarnmsg is _show:
            warnings._showwarnmsg = _original_show
        _original_show = None
