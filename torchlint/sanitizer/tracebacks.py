"""Tracebacks that point at the user's code, not at the sanitizer.

Exceptions that cross the sanitizer (a ``SanitizerError`` with
``action="raise"``, or the user's own error re-raised through a hook) lose the
sanitizer's frames from their traceback where they leave it, and once more when
they leave the ``sanitize()`` block, so that the last frame of a
``SanitizerError`` is the user's line and a torch error shows the frames plain
Python shows.
"""

from __future__ import annotations

import os
from types import TracebackType

from .findings import SanitizerError
from .locations import is_user_file

_OWN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def is_own_file(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_OWN_DIR)


def clean_traceback(tb: TracebackType | None, end_at_user: bool = False) -> TracebackType | None:
    """``tb`` without the sanitizer's frames; with ``end_at_user`` also without
    the (torch) frames after the user's innermost one."""
    entries = []
    while tb is not None:
        if not is_own_file(tb.tb_frame.f_code.co_filename):
            entries.append(tb)
        tb = tb.tb_next
    if end_at_user:
        users = [i for i, entry in enumerate(entries) if is_user_file(entry.tb_frame.f_code.co_filename)]
        if users:
            del entries[users[-1] + 1 :]
    for entry, following in zip(entries, entries[1:]):
        entry.tb_next = following
    if entries:
        entries[-1].tb_next = None
    return entries[0] if entries else None


def cleaned(exc: BaseException) -> BaseException:
    """``exc`` with a cleaned traceback (a ``SanitizerError`` ends at the user's line)."""
    exc.__traceback__ = clean_traceback(exc.__traceback__, end_at_user=isinstance(exc, SanitizerError))
    return exc
