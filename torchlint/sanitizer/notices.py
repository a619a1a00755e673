"""TS100 notice: compiled regions are not inspected (said once, not a finding)."""

from __future__ import annotations

import warnings

from .check import Check

COMPILED_NOTE = (
    "compiled regions are not inspected: torch.compile'd modules run without the sanitizer's "
    "module, loss and in-place checks; run them uncompiled to check them"
)


class CompiledNotice(Check):
    codes = {}

    def install(self) -> None:
        # torch warns on every call of a compiled module while global module hooks
        # exist (ours); the note below says it once.  The session restores filters.
        warnings.filterwarnings("ignore", message=r"Using `torch.compile\(module\)` when there are global hooks")

    def on_root_pre(self, module, args) -> None:
        if type(module).__name__ == "OptimizedModule" or getattr(module, "_compiled_call_impl", None) is not None:
            self.session.note(COMPILED_NOTE)
