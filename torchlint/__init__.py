"""torchlint: a linter and a runtime sanitizer for PyTorch training code.

Importing this package is cheap and never imports torch: the sanitizer names
below are resolved lazily, on first use, from :mod:`torchlint.sanitizer`.
"""

__version__ = "0.1.0"

_SANITIZER_EXPORTS = ("sanitize", "SanitizerWarning", "SanitizerError", "Finding", "Report")

__all__ = ["__version__", *_SANITIZER_EXPORTS]


def __getattr__(name):
    if name in _SANITIZER_EXPORTS:
        from . import sanitizer

        return getattr(sanitizer, name)
    raise AttributeError(f"module 'torchlint' has no attribute {name!r}")
