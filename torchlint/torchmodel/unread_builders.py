"""Objects built by code the linter cannot read, and nothing in the file shows to be networks.

``iqa = create_metric("lpips")`` with ``create_metric`` imported from another package (or from a
file of the project missing here): the object may be a network, a metric that wraps one and runs
it under ``no_grad``, a client, a callable of any kind. Its name (``iqa_model``) is a guess the
code does not back: unless something in the file uses it the way only a module is used
(``.parameters()``, ``.eval()``, ``.load_state_dict(...)``), a call of it is no evidence of a
forward pass that records a graph ("shown, else silent").

torch's own loaders (``torch.load``, ``torch.jit.load``) are not unread: they return modules.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import resolve_callee, resolve_class
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.imports import dotted_name
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.constructors import constructor_role, same_module

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

__all__ = ["built_by_unread_code"]


def built_by_unread_code(ctx: FileContext, expr: ast.AST) -> bool:
    """Whether every value ``expr`` may hold comes from a call of an imported function or class the
    linter cannot read (not torch's, not of a project file it can parse, no constructor it knows),
    and no code that sees ``expr``'s name uses it as a module."""
    origins = dataflow(ctx).origins(expr, through=lambda e: same_module(ctx, e))
    if not origins or not all(_unread_call(ctx, o) for o in origins):
        return False
    name = dotted_name(expr)
    return name is not None and not _used_as_module(ctx, name)


def _unread_call(ctx: FileContext, origin: ast.AST | None) -> bool:
    if not isinstance(origin, ast.Call):
        return False
    qual = ctx.call_qualname(origin)
    if qual is None or qual.split(".", 1)[0] == "torch":
        return False  # a local name, or torch's own loader: `torch.load(path)` returns the module
    if constructor_role(ctx, origin) is not None:
        return False  # a constructor the linter knows (`timm.create_model`, a class of the project)
    return resolve_callee(ctx, origin) is None and resolve_class(ctx, origin.func) is None


def _used_as_module(ctx: FileContext, name: str) -> bool:
    """``name.parameters()``, ``name.eval()``, ``name.load_state_dict(...)`` anywhere in the file."""
    for node in ctx.nodes(ast.Attribute):
        if (
            node.attr in torch_names.MODULE_ONLY_METHODS
            and isinstance(ctx.parent(node), ast.Call)
            and dotted_name(node.value) == name
        ):
            return True
    return False
