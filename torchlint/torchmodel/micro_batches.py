"""Whether the passes of an inner loop see new data: what tells micro-batch accumulation from a
multi-term objective on one batch.

Gradient accumulation over micro-batches needs a new batch for every backward. When every input
the loss of an inner loop is computed from stays the same across the loop's passes (no batch
drawn, no iterator advanced, nothing indexed by the loop variable), its summed backwards are one
objective with several terms -- NAS supernets summing the losses of several sampled paths on the
same batch, say -- and not micro-batches whose mean losses should have been divided.

``same_data_each_pass(ctx, loop, loss)`` answers that, and only when the code shows it:
anything it cannot follow counts as new data.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.imports import symbol
from torchlint.analysis.nodes import last_name, walk_no_scopes
from torchlint.torchmodel.roles import Role, object_roles
from torchlint.torchmodel.vocabulary import (
    DEVICE_DTYPE_MOVES,
    PURE_BUILTINS,
    RANDOM_FUNCTIONS,
    TENSOR_VALUE_METHODS,
)

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

# Roles whose calls compute from their arguments: a model's forward, a criterion.
_COMPUTING_ROLES = frozenset({Role.MODEL, Role.CRITERION})
# Binding kinds whose value is an expression that can be followed.
_FOLLOWED_KINDS = frozenset({"assign", "augassign", "walrus", "unpack"})
# Calls that advance an iterator wherever they are in the loop.
_ADVANCING = frozenset({"next", "__next__"})


def same_data_each_pass(ctx: FileContext, loop: ast.AST, loss: ast.AST | None) -> bool:
    """Whether ``loss`` (sent to backward inside ``loop``) is shown to be computed from the same
    inputs on every pass of ``loop``: every name it reads is bound outside the loop or from such
    values inside it, through model and criterion calls, torch functions, tensor methods and
    arithmetic. A call the analysis cannot see into, an iterator advanced anywhere in the loop, or
    the loop's own variable feeding the loss: new data."""
    if loss is None or not isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
        return False
    for node in walk_no_scopes(loop):
        if isinstance(node, ast.Call) and last_name(node.func) in _ADVANCING:
            return False
    return _Invariance(ctx, loop).same(loss)


class _Invariance:
    """Follows one loss expression back through the bindings made inside one loop."""

    def __init__(self, ctx: FileContext, loop: ast.AST):
        self.ctx = ctx
        self.loop = loop
        self.flow = dataflow(ctx)
        self.scope = self.flow.scope_of(loop)
        self.visiting: set[str] = set()

    def same(self, expr: ast.AST | None, index: bool = False) -> bool:
        """Whether ``expr`` has the same data on every pass (``index``: it is used to pick elements)."""
        if expr is None or isinstance(expr, ast.Constant):
            return True
        if isinstance(expr, (ast.Name, ast.Attribute)):
            key = ast.unparse(expr)
            inside = self._bindings_inside(key)
            if inside is not None:
                return self._bindings_same(key, inside, index)
            return not isinstance(expr, ast.Attribute) or self.same(expr.value, index)
        if isinstance(expr, ast.Subscript):
            return self.same(expr.value, index) and self.same(expr.slice, True)
        if isinstance(expr, ast.Call):
            return self._call_same(expr, index)
        if isinstance(expr, ast.Starred | ast.keyword):
            return self.same(expr.value, index)
        if isinstance(
            expr,
            ast.BinOp | ast.UnaryOp | ast.BoolOp | ast.Compare | ast.IfExp | ast.Tuple | ast.List | ast.Slice,
        ):
            return all(self.same(child, index) for child in ast.iter_child_nodes(expr) if isinstance(child, ast.expr))
        return False  # lambdas, comprehensions, f-strings...: not followed

    def _bindings_inside(self, key: str) -> list | None:
        """The bindings of ``key`` made inside the loop (in its scope), or None when there are none."""
        start, end = self.loop.lineno, self.loop.end_lineno or self.loop.lineno
        inside = [
            b
            for b in self.flow.bindings_anywhere(key)
            if start <= getattr(b.stmt, "lineno", 0) <= end and self.flow.scope_of(b.stmt) is self.scope
        ]
        return inside or None

    def _bindings_same(self, key: str, bindings: list, index: bool) -> bool:
        if key in self.visiting:
            return True  # `loss = loss + term`: the cycle adds nothing the other terms do not show
        self.visiting.add(key)
        try:
            for binding in bindings:
                if binding.kind not in _FOLLOWED_KINDS:
                    return False  # the loop's own variable, a `with ... as`, an import...
                if binding.kind == "augassign":
                    if not self.same(binding.source, index):
                        return False
                    continue
                value = binding.source if binding.kind == "unpack" else binding.value
                if value is None and binding.source is not None:
                    value = binding.source
                if value is None or not self.same(value, index):
                    return False
            return True
        finally:
            self.visiting.discard(key)

    def _call_same(self, call: ast.Call, index: bool) -> bool:
        arguments = [*call.args, *call.keywords]
        func = call.func
        qualified = symbol(func) or ""
        if qualified in RANDOM_FUNCTIONS:
            # Noise on the same batch keeps it; an index drawn at random picks new samples.
            return not index and all(self.same(a) for a in arguments)
        if isinstance(func, ast.Name) and func.id in PURE_BUILTINS and not self.flow.bindings_anywhere(func.id):
            return all(self.same(a, index) for a in arguments)
        if qualified.startswith("torch.") or object_roles(self.ctx).role_of(func) in _COMPUTING_ROLES:
            return all(self.same(a, index) for a in arguments)
        if isinstance(func, ast.Attribute):
            receiver = func.value
            # A tensor method: on a value computed in the loop, or one that only reads its receiver.
            computed = not isinstance(receiver, ast.Name | ast.Attribute) or (
                self._bindings_inside(ast.unparse(receiver)) is not None
            )
            if computed or func.attr in TENSOR_VALUE_METHODS or func.attr in DEVICE_DTYPE_MOVES:
                return self.same(receiver, index) and all(self.same(a, index) for a in arguments)
        return False  # a call not seen into (`get_batch("train")`): it may draw a batch
