"""Import and alias resolution, so rules match qualified names instead of spellings.

``import torch.nn as nn`` makes ``nn.Linear`` resolve to ``torch.nn.Linear``;
``from torch.optim import AdamW as Opt`` makes ``Opt`` resolve to
``torch.optim.AdamW``. Imports anywhere in the module count (function-local
imports are common in training scripts); a later binding of the same alias wins.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from functools import lru_cache
from typing import NamedTuple

# Spellings that mean the same object; the key is rewritten to the value.
_CANONICAL_PREFIXES = (
    ("torch.cuda.amp.GradScaler", "torch.amp.GradScaler"),
    ("torch.cuda.amp.grad_scaler.GradScaler", "torch.amp.GradScaler"),
    ("torch.amp.grad_scaler.GradScaler", "torch.amp.GradScaler"),
    ("torch.cuda.amp.autocast", "torch.autocast"),
    ("torch.cpu.amp.autocast", "torch.autocast"),
    ("torch.amp.autocast", "torch.autocast"),
    ("torch.amp.autocast_mode.autocast", "torch.autocast"),
    ("torch.nn.modules.loss.", "torch.nn."),
    ("torch.nn.modules.", "torch.nn."),
    ("torch.optim.lr_scheduler.", "torch.optim.lr_scheduler."),
    ("torch.autograd.grad_mode.", "torch."),
    ("torch.autograd.no_grad", "torch.no_grad"),
    ("torch.autograd.enable_grad", "torch.enable_grad"),
    ("torch.autograd.inference_mode", "torch.inference_mode"),
    ("torch.nn.parallel.distributed.", "torch.nn.parallel."),
    ("torch.utils.data.dataloader.", "torch.utils.data."),
    ("torch.utils.data.distributed.", "torch.utils.data."),
)


@lru_cache(maxsize=8192)  # called for every name a rule resolves; the answers repeat
def canonical(qualname: str) -> str:
    for prefix, replacement in _CANONICAL_PREFIXES:
        if qualname == prefix or qualname.startswith(prefix):
            return replacement + qualname[len(prefix) :]
    return qualname


class ImportBinding(NamedTuple):
    """What one import statement binds a name to, as written (resolved to a file by analysis.project)."""

    level: int  # leading dots of a relative import; 0 for an absolute one
    module: str  # the module the statement names ("" in ``from . import x``)
    name: str | None  # the name imported from that module; None when the name is bound to the module itself


class ImportResolver:
    def __init__(self, import_nodes: Iterable[ast.AST], star_imported: dict[str, str] | None = None):
        # Names brought in by ``from <module> import *`` (found by analysis.project, which can read
        # the module) come first: the file's own imports replace them.
        self.aliases: dict[str, str] = dict(star_imported or {})
        # The same bindings, kept structured: a relative import's level cannot be told from a dotted string.
        self.bindings: dict[str, ImportBinding] = {}
        # Answers by node: rules and shared models resolve the same call's name many times.
        self._resolved: dict[ast.AST, str | None] = {}
        for node in sorted(import_nodes, key=lambda n: (n.lineno, n.col_offset)):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.aliases[alias.asname] = alias.name
                        self.bindings[alias.asname] = ImportBinding(0, alias.name, None)
                    else:
                        top = alias.name.split(".", 1)[0]
                        self.aliases[top] = top
                        self.bindings[top] = ImportBinding(0, top, None)
            elif isinstance(node, ast.ImportFrom):
                module = "." * node.level + (node.module or "")
                for alias in node.names:
                    if alias.name == "*":
                        continue
                    bound = alias.asname or alias.name
                    self.aliases[bound] = f"{module}.{alias.name}" if module else alias.name
                    self.bindings[bound] = ImportBinding(node.level, node.module or "", alias.name)

    def qualname(self, expr: ast.AST) -> str | None:
        """The canonical qualified name ``expr`` refers to, or None if it is not an imported name."""
        try:
            return self._resolved[expr]
        except KeyError:
            pass
        except TypeError:  # an unhashable stand-in for a node
            return self._qualname(expr)
        found = self._resolved[expr] = self._qualname(expr)
        return found

    def _qualname(self, expr: ast.AST) -> str | None:
        raw = self.raw_qualname(expr)
        return canonical(raw) if raw is not None else None

    def raw_qualname(self, expr: ast.AST) -> str | None:
        """The imported name ``expr`` refers to, spelled as imported (no canonical folding:
        ``torch.cuda.amp.autocast`` stays itself, which tells its default dtype)."""
        name = dotted_name(expr)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        base = self.aliases.get(head)
        if base is None:
            return None
        return f"{base}.{rest}" if rest else base


def dotted_name(expr: ast.AST) -> str | None:
    """``self.opt.step`` for an attribute chain on a plain name; None for anything else."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    parts.append(expr.id)
    return ".".join(reversed(parts))


def symbol(expr: ast.AST) -> str | None:
    """A stable textual key for a value holder: dotted names, and subscripts like ``opts[0]``."""
    name = dotted_name(expr)
    if name is not None:
        return name
    if isinstance(expr, (ast.Subscript, ast.Attribute)):
        try:
            return ast.unparse(expr)
        except Exception:  # pragma: no cover - unparse of odd trees
            return None
    return None
