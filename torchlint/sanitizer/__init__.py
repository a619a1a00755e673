"""torchlint's runtime sanitizer: ``with torchlint.sanitize(): train()``.

The finding/report classes are importable without torch; ``sanitize`` (which
needs torch) is loaded on first use.  The check plug-in interface is described
in :mod:`torchlint.sanitizer.core`.
"""

from .findings import CHECK_NAMES, Finding, Location, Report, SanitizerError, SanitizerWarning

__all__ = [
    "CHECK_NAMES",
    "Check",
    "Finding",
    "Location",
    "Report",
    "SanitizerError",
    "SanitizerWarning",
    "register_check",
    "sanitize",
]

_CORE_EXPORTS = ("sanitize", "Check", "register_check", "SanitizerOptions", "Session")


def __getattr__(name):
    if name in _CORE_EXPORTS:
        from . import core

        return getattr(core, name)
    raise AttributeError(f"module 'torchlint.sanitizer' has no attribute {name!r}")
