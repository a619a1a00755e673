"""Module classes of the project that hold no state: no parameter, no buffer, no submodule that
has one, and nothing that depends on train/eval mode (``class moving_avg(nn.Module)`` wrapping
an ``nn.AvgPool1d``). Keeping their instances in a plain list loses nothing: there is nothing to
train, move, save or switch.

``stateless_class(ctx, call)``: whether ``call`` builds such a class, as far as the code shows:
the class (here or in another file of the project) derives from ``torch.nn.Module`` or from
another such class only, every attribute its methods set is a weightless torch layer (dropout
excluded), an instance of another such class, or plain data the class never calls; it registers
nothing by hand, builds no ``nn.Parameter``, reads no ``.training`` and calls no dropout. Anything
else, or a class the linter cannot read, is not stateless.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import resolve_class
from torchlint.torchmodel import vocabulary as torch_names

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

_STATELESS_LAYERS = frozenset("torch.nn." + name for name in torch_names.WEIGHTLESS_LAYERS - torch_names.DROPOUT_LAYERS)
_MAX_DEPTH = 4


def stateless_layer(qualname: str | None) -> bool:
    """A torch layer with no parameters, buffers or train/eval behaviour (``torch.nn.ReLU``)."""
    return qualname in _STATELESS_LAYERS


def stateless_class(ctx: FileContext, call: ast.Call, depth: int = 0) -> bool:
    """Whether ``call`` builds an instance of a project module class that holds no state."""
    if depth > _MAX_DEPTH:
        return False
    found = resolve_class(ctx, call.func)
    if found is None:
        return False
    return stateless_definition(*found, depth)


def stateless_definition(ctx: FileContext, cls: ast.ClassDef, depth: int = 0) -> bool:
    """Whether the project module class ``cls`` of ``ctx``'s file holds no state (once per class)."""
    return ctx.shared(("stateless-class", cls), lambda: _stateless(ctx, cls, depth))


def _stateless(ctx: FileContext, cls: ast.ClassDef, depth: int) -> bool:
    for base in cls.bases:
        qual = ctx.qualname(base)
        if qual in torch_names.MODULE_BASES:
            continue
        if not (isinstance(base, (ast.Name, ast.Attribute)) and _stateless_base(ctx, base, depth)):
            return False
    numbers = _numeric_attributes(cls)
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and node.attr == "training":
            return False
        if isinstance(node, ast.Call):
            qual = ctx.call_qualname(node) or ""
            if qual in torch_names.PARAMETER_CLASSES or "dropout" in qual.lower():
                return False
            if isinstance(node.func, ast.Attribute) and node.func.attr in torch_names.REGISTERING_METHODS:
                return False
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and _is_self(target.value):
                    if not _holds_no_state(ctx, node.value, target.attr in numbers, depth):
                        return False
                elif not all(isinstance(n, (ast.Name, ast.Tuple, ast.List, ast.Store)) for n in ast.walk(target)):
                    return False  # stores into containers (``self.layers[i] = ...``): cannot tell
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Attribute):
            return False
    return True


def _stateless_base(ctx: FileContext, base: ast.expr, depth: int) -> bool:
    found = resolve_class(ctx, base)
    if found is None:
        return False
    return stateless_definition(*found, depth + 1)


def _holds_no_state(ctx: FileContext, value: ast.AST, numeric: bool, depth: int) -> bool:
    """A value set on ``self`` that brings no state: a weightless torch layer, a stateless project
    class, or a literal; a name (``self.kernel_size = kernel_size``) only when the class uses the
    attribute as a number and nothing else."""
    if isinstance(value, ast.Call):
        if stateless_layer(ctx.call_qualname(value)):
            return True
        return stateless_class(ctx, value, depth + 1)
    if isinstance(value, ast.Constant):
        return True
    return numeric and isinstance(value, ast.Name)


def _numeric_attributes(cls: ast.ClassDef) -> set[str]:
    """Attributes of ``self`` read only as operands of arithmetic or comparisons (``(self.k - 1) // 2``)."""
    uses: dict[str, bool] = {}
    parents = {child: node for node in ast.walk(cls) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and _is_self(node.value) and isinstance(node.ctx, ast.Load):
            parent = parents.get(node)
            numeric = isinstance(parent, (ast.BinOp, ast.Compare, ast.UnaryOp))
            uses[node.attr] = uses.get(node.attr, True) and numeric
    return {name for name, numeric in uses.items() if numeric}


def _is_self(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Name) and expr.id == "self"
