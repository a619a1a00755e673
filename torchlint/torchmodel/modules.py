"""Which classes of a file are torch modules: ``nn.Module`` subclasses, through bases defined in the file."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchlint.analysis.imports import dotted_name
from torchlint.torchmodel import vocabulary as torch_names

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext


def module_classes(ctx: FileContext) -> frozenset[str]:
    """Names of classes in this file that derive (transitively) from ``nn.Module``."""
    return ctx.shared("module_classes", lambda: _find_module_classes(ctx))


def _find_module_classes(ctx: FileContext) -> frozenset[str]:
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, cls in ctx.classes.items():
            if name in found:
                continue
            for base in cls.bases:
                qual = ctx.qualname(base)
                local = dotted_name(base)
                if (
                    (qual and qual in torch_names.MODULE_BASES)
                    or (local in found)
                    or (qual is None and local in torch_names.MODULE_BASE_SPELLINGS)
                ):
                    found.add(name)
                    changed = True
                    break
    return frozenset(found)
