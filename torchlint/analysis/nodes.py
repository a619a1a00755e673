"""Small questions about syntax nodes that every analysis asks: a node's children (fast), where a
node starts, which names an expression reads, the last name of a callee, walks that stay in one
scope, a node's source text."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext


# Fields that never hold a child node of interest: expression contexts and operators are
# shared singletons in CPython's trees; the rest are plain strings and numbers.
_SKIPPED_FIELDS = frozenset(
    {
        "ctx",
        "op",
        "ops",
        "id",
        "attr",
        "arg",
        "asname",
        "module",
        "level",
        "kind",
        "type_comment",
        "conversion",
        "is_async",
        "simple",
        "tag",
    }
)
CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def child_fields(cls: type) -> tuple[str, ...]:
    """The fields of ``cls`` that may hold child nodes, in reverse order (for a stack walk)."""
    fields = tuple(
        name
        for name in reversed(cls._fields)
        if name not in _SKIPPED_FIELDS and not (cls is ast.Constant and name == "value")
    )
    CHILD_FIELDS[cls] = fields
    return fields


def iter_children(node: ast.AST) -> list[ast.AST]:
    """The child nodes of ``node`` in source order, like ``ast.iter_child_nodes`` but without
    the shared expression-context and operator singletons, and several times faster."""
    cls = type(node)
    fields = CHILD_FIELDS.get(cls)
    if fields is None:
        fields = child_fields(cls)
    children = []
    for name in reversed(fields):
        value = getattr(node, name, None)
        if value is None:
            continue
        if type(value) is list:
            for item in value:
                if isinstance(item, ast.AST):
                    children.append(item)
        elif isinstance(value, ast.AST):
            children.append(value)
    return children


def position(node: ast.AST) -> tuple[int, int]:
    """Where a node starts, for ordering; a ``withitem`` (no position of its own) starts at its
    expression, and nodes without a position sort first."""
    if isinstance(node, ast.withitem):
        node = node.context_expr
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


def end_position(node: ast.AST) -> tuple[int, int]:
    """Where a node ends, for ordering against ``position``; nodes without one sort first."""
    return getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0


def name_ids(expr: ast.AST) -> set[str]:
    """The bare names an expression mentions (``model(x[i])`` -> {"model", "x", "i"})."""
    return {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}


def last_name(expr: ast.AST) -> str | None:
    """The last identifier of a name or attribute chain (``self.model.fc`` -> "fc")."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None


def self_attribute_name(expr: ast.AST) -> str | None:
    """``<name>`` of ``self.<name>`` (``self.net_G``), else None."""
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
        return expr.attr
    return None


def target_elements(target: ast.AST) -> list[ast.AST]:
    """The holders an assignment target binds: itself, or each element of a tuple/list target
    (through starred elements: ``a, *rest = ...`` binds ``a`` and ``rest``)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return [bound for element in target.elts for bound in target_elements(element)]
    if isinstance(target, ast.Starred):
        return target_elements(target.value)
    return [target]


# Nodes that open a scope of their own: walks "in one scope" stop at them.
NEW_SCOPES = frozenset({ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})


def walk_no_scopes(node: ast.AST) -> Iterator[ast.AST]:
    """Like ``ast.walk`` (depth-first, so not in source order), but not into lambdas, nested
    functions or classes."""
    # iter_children rather than ast.iter_child_nodes: several times faster, and it leaves out
    # the shared Load/Store/operator singletons that no caller looks for.
    stack = [node]
    pop, push = stack.pop, stack.append
    while stack:
        current = pop()
        yield current
        for child in iter_children(current):
            if type(child) not in NEW_SCOPES:
                push(child)


def walk_function_body(func: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's own body (``walk_no_scopes`` of each statement, nested defs skipped)."""
    for stmt in func.body:
        if type(stmt) not in NEW_SCOPES:
            yield from walk_no_scopes(stmt)


def source_text(ctx: FileContext, node: ast.AST) -> str:
    """``ast.unparse(node)``, shared per node (conditions are compared by their text many times)."""
    return ctx.shared(("text", node), lambda: ast.unparse(node))


# ----- calls and their arguments --------------------------------------------------------------
def returns_of(function: ast.AST) -> list[ast.Return]:
    """``return`` statements of ``function`` itself, not of functions or classes nested in it."""
    found: list[ast.Return] = []
    stack = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.Return):
            found.append(node)
            continue
        for child in iter_children(node):
            if isinstance(child, (ast.stmt, ast.ExceptHandler, ast.match_case)):
                stack.append(child)
    return found


def method_call(expr: ast.AST) -> tuple[str, ast.AST] | None:
    """For ``obj.meth(...)``: (``meth``, ``obj``); else None."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        return expr.func.attr, expr.func.value
    return None


def value_operands(expr: ast.AST, methods: frozenset[str]) -> list[ast.AST] | None:
    """The sub-expressions ``expr``'s value is computed from with no other function called in
    between: a binary operation's operands, a unary one's operand, the object of an attribute or
    item, the receiver of one of ``methods`` (``loss.mean()`` with ``mean`` among them); None for
    anything else. The shared step of walks that follow a value back to what it is made of."""
    if isinstance(expr, ast.BinOp):
        return [expr.left, expr.right]
    if isinstance(expr, ast.UnaryOp):
        return [expr.operand]
    if isinstance(expr, (ast.Attribute, ast.Subscript)):
        return [expr.value]
    kept = method_call(expr)
    if kept is not None and kept[0] in methods:
        return [kept[1]]
    return None


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw
    return None


def argument(call: ast.Call, index: int, name: str) -> ast.AST | None:
    """The argument passed for a parameter, by keyword or by position (not when a ``*args``
    before it makes the position unknown)."""
    kw = keyword(call, name)
    if kw is not None:
        return kw.value
    args = call.args
    if index < len(args) and not any(isinstance(a, ast.Starred) for a in args[: index + 1]):
        return args[index]
    return None


def argument_for(call: ast.Call, func: ast.AST, name: str, bound: bool = False) -> ast.AST | None:
    """The argument expression ``call`` passes for parameter ``name`` of the def ``func``
    (``self``/``cls`` skipped for a method called on an object, which it names: ``obj`` of
    ``obj.method()`` is what ``self`` holds; ``bound``: ``call`` calls the object itself, as
    ``obj(x)`` runs a method ``def __call__(self, x)`` or one it dispatches to)."""
    params = [a.arg for a in func.args.posonlyargs + func.args.args]
    if params and params[0] in ("self", "cls") and (bound or isinstance(call.func, ast.Attribute)):
        if name == params[0]:
            return call.func.value
        params = params[1:]
    index = params.index(name) if name in params else len(call.args)
    return argument(call, index, name)
