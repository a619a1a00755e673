"""Lazy initialisation: code that runs only the first time, because it fills the very holder it tests.

``if self.criterion is None: self.criterion = Loss()``, ``if not hasattr(self, "opt"): self.opt = ...``,
``if key not in cache: cache[key] = build(key)``, ``if not state["opt"]: state["opt"] = ...``: the
test asks whether a holder (a name, an attribute chain, a subscript) is still empty, and the guarded
block stores into that same holder, so once it has run the test fails and the block never runs
again -- unless something empties the holder again (``self.criterion = None``, ``del cache[key]``,
``cache.clear()``, ``cache = {}``), a *reset*. A condition on anything else (``if epoch == 5:``,
``if args.rebuild:``) is not a guard of this kind. Nothing here knows about PyTorch.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.nodes import returns_of, target_elements, walk_no_scopes

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

HOLDERS = (ast.Name, ast.Attribute, ast.Subscript)


def emptiness_holders(test: ast.AST) -> list[str]:
    """The holders (as text) ``test`` is true only while empty: ``h is None``, ``h == None``,
    ``not h``, ``not hasattr(o, "a")`` (``o.a``), ``k not in d`` (``d[k]``); for ``a and b``,
    those of either side (the conjunction fails as soon as one side does)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [h for value in test.values for h in emptiness_holders(value)]
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, right = test.ops[0], test.comparators[0]
        if isinstance(op, (ast.Is, ast.Eq)) and isinstance(right, ast.Constant) and right.value is None:
            return [ast.unparse(test.left)] if isinstance(test.left, HOLDERS) else []
        if isinstance(op, ast.NotIn) and isinstance(right, HOLDERS):
            return [f"{ast.unparse(right)}[{ast.unparse(test.left)}]"]
        return []
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        operand = test.operand
        if isinstance(operand, HOLDERS):
            return [ast.unparse(operand)]
        named = _attribute_named_by(operand, "hasattr", 2)
        if named is not None:
            return [named]
    return []


def _attribute_named_by(node: ast.AST, builtin: str, arity: int) -> str | None:
    """``"o.a"`` for ``hasattr(o, "a")``/``setattr(o, "a", v)`` (the builtin ``builtin`` called with
    ``arity`` arguments, the name a string literal); else None."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == builtin
        and len(node.args) == arity
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return None
    return f"{ast.unparse(node.args[0])}.{node.args[1].value}"


def _stores(block: list[ast.stmt]) -> list[tuple[str, ast.AST | None]]:
    """``(holder text, value)`` for each store in ``block`` (not in nested scopes): assignments
    and ``setattr(o, "a", v)``; the value is None where it cannot be told (unpacking)."""
    found = []
    for stmt in block:
        for node in walk_no_scopes(stmt):
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    whole = target_elements(target) == [target]
                    for element in target_elements(target):
                        if isinstance(element, HOLDERS):
                            found.append((ast.unparse(element), node.value if whole else None))
            elif (named := _attribute_named_by(node, "setattr", 3)) is not None:
                found.append((named, node.args[2]))
    return found


def first_use_guard(ctx: FileContext, node: ast.AST, stop: ast.AST) -> tuple[ast.If, str] | None:
    """``(guard, holder)``: an ``if`` between ``node`` and ``stop`` (a loop or function holding it)
    whose body holds ``node`` and stores into a holder the test finds empty."""
    for ancestor in ctx.ancestors(node):
        if ancestor is stop:
            return None
        if isinstance(ancestor, ast.If) and any(node is stmt or ctx.is_inside(node, stmt) for stmt in ancestor.body):
            stored = {text for text, _ in _stores(ancestor.body)}
            holder = next((h for h in emptiness_holders(ancestor.test) if h in stored), None)
            if holder is not None:
                return ancestor, holder
    return None


def lasting_first_use_guard(ctx: FileContext, node: ast.AST, scope: ast.AST) -> tuple[ast.If, str] | None:
    """``first_use_guard`` of ``node`` within ``scope`` when nothing in ``scope`` empties its holder
    again (``resets``): the guarded block runs once per run of ``scope``."""
    lazy = first_use_guard(ctx, node, scope)
    return lazy if lazy is not None and not resets(scope, lazy[1], lazy[0]) else None


def _prefixes(holder: str) -> set[str]:
    """``self.cache[k]`` -> {``self.cache``, ``self``}: the holders whose rebinding empties it."""
    try:
        expr = ast.parse(holder, mode="eval").body
    except SyntaxError:
        return set()
    found = set()
    while isinstance(expr, (ast.Attribute, ast.Subscript)):
        expr = expr.value
        found.add(ast.unparse(expr))
    return found


def resets(scope: ast.AST, holder: str, guard: ast.If | None = None) -> bool:
    """Whether code in ``scope`` (a loop or function), outside ``guard``'s body, empties ``holder``
    again: stores None or an empty container in it, deletes it (``del``, ``delattr``,
    ``d.pop(k)``, ``d.clear()``), or rebinds what holds it (``cache = {}`` for ``cache[k]``)."""
    inside = {id(n) for stmt in (guard.body if guard else []) for n in walk_no_scopes(stmt)}
    prefixes = _prefixes(holder)
    for stmt in getattr(scope, "body", []):
        for node in walk_no_scopes(stmt):
            if id(node) in inside:
                continue
            if isinstance(node, ast.Delete) and any(ast.unparse(t) in prefixes | {holder} for t in node.targets):
                return True
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                for text, value in _stores([node]):
                    if text in prefixes or (text == holder and (value is None or _empty(value))):
                        return True
            if isinstance(node, ast.Call) and _empties_by_call(node, holder):
                return True
    return False


def _empties_by_call(call: ast.Call, holder: str) -> bool:
    """``d.clear()`` / ``d.pop(k)`` for ``d[k]``, ``delattr(o, "a")`` for ``o.a``."""
    if isinstance(call.func, ast.Attribute):
        owner = ast.unparse(call.func.value)
        if call.func.attr == "clear" and holder.startswith(owner + "["):
            return True
        return call.func.attr == "pop" and bool(call.args) and holder == f"{owner}[{ast.unparse(call.args[0])}]"
    return _attribute_named_by(call, "delattr", 2) == holder


def _empty(value: ast.AST) -> bool:
    """None, or an empty literal container."""
    if isinstance(value, ast.Constant):
        return value.value is None
    if isinstance(value, ast.Dict):
        return not value.keys
    return isinstance(value, (ast.List, ast.Tuple, ast.Set)) and not value.elts


def returns_holder(func: ast.AST, holder: str) -> bool:
    """Every ``return`` of ``func`` gives ``holder`` back (``return optimizer``)."""
    found = returns_of(func)
    return bool(found) and all(r.value is not None and ast.unparse(r.value) == holder for r in found)


def holder_root(holder: str) -> str | None:
    """The plain name a holder hangs from: ``self`` of ``self.cache[k]``."""
    try:
        expr = ast.parse(holder, mode="eval").body
    except SyntaxError:
        return None
    while isinstance(expr, (ast.Attribute, ast.Subscript)):
        expr = expr.value
    return expr.id if isinstance(expr, ast.Name) else None


def outlives_call(ctx: FileContext, func: ast.AST, holder: str) -> bool:
    """Whether ``holder``, filled in ``func``, keeps its value from one call of ``func`` to the
    next: it hangs from ``self``/``cls``, from a parameter (an object the caller holds) or from a
    module-level name, not from a name the function binds afresh. A plain parameter name
    (``optimizer``) does not: rebinding it is lost when the call returns (see ``returns_holder``)."""
    root = holder_root(holder)
    if root is None:
        return False
    params = [a.arg for a in func.args.posonlyargs + func.args.args + func.args.kwonlyargs]
    if root == holder:
        return ctx.declares_global(func, root)
    if root in params:
        return True
    bound = {
        n.id
        for stmt in func.body
        for n in walk_no_scopes(stmt)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    return root not in bound or ctx.declares_global(func, root)
