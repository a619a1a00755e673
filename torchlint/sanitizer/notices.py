"""TS100 notice: compiled regions are not inspected (said once, not a finding)."""

from __future__ import annotations

import sys
import warnings

from .check import Check

COMPILED_NOTE = (
    "compiled regions are not inspected: torch.compile'd modules and functions run without the "
    "sanitizer's module, loss and in-place checks; run them uncompiled to check them"
)


def _compiled_graphs() -> int:
    """Graphs dynamo has compiled in this process (0 while dynamo was never imported)."""
    utils = sys.modules.get("torch._dynamo.utils")
    return utils.counters["stats"]["unique_graphs"] if utils is not None else 0


class CompiledNotice(Check):
    codes = {}

    def install(self) -> None:
        # torch warns on every call of a compiled module while global module hooks
        # exist (ours); the note below says it once.  The session restores filters.
        warnings.filterwarnings("ignore", message=r"Using `torch.compile\(module\)` when there are global hooks")
        self._graphs = _compiled_graphs()

    def finish(self) -> None:
        # A compiled function (not a module) is seen by no module hook: by dynamo's count.
        if _compiled_graphs() != self._graphs:
            self.session.note(COMPILED_NOTE)

    def on_root_pre(self, module, args) -> None:
        if type(module).__name__ == "OptimizedModule" or getattr(module, "_compiled_call_impl", None) is not None:
            self.session.note(COMPILED_NOTE)
