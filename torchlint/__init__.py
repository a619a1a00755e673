"""torchlint: a linter and a runtime sanitizer for PyTorch training code.

Importing this package is cheap and never imports torch: the sanitizer names
below are resolved lazily, on first use, from :mod:`torchlint.sanitizer`, and the
linter's ``lint_source``/``lint_file`` from :mod:`torchlint.engine.lint`.
"""

__version__ = "0.2.0"
# Where the project lives; the rule pages every finding links to are under it.
__url__ = "https://github.com/torchlint/torchlint"

_SANITIZER_EXPORTS = ("sanitize", "SanitizerWarning", "SanitizerError", "Finding", "Report")
# The linter's library API (the command line is ``torchlint.cli``).
_LINT_EXPORTS = ("lint_source", "lint_file")

__all__ = ["__version__", *_SANITIZER_EXPORTS, *_LINT_EXPORTS]


def __getattr__(name):
    if name in _SANITIZER_EXPORTS:
        from . import sanitizer

        return getattr(sanitizer, name)
    if name in _LINT_EXPORTS:
        from .engine import lint

        return getattr(lint, name)
    raise AttributeError(f"module 'torchlint' has no attribute {name!r}")
