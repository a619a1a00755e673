"""Names that stand for one constant: ``TRAIN = "train"`` at a module's top level, a class
attribute (``Split.VAL = 1`` in the class body), a member of an ``enum.Enum``
(``LoopPhase.VAL``), here or imported from another file of the project.

A name bound once, to a literal, in the function that reads it (``world_size = 1``) stands for
that literal too.

``constant_value(ctx, expr)`` gives the Python value such an expression holds wherever it is
read, so that a condition like ``phase == LoopPhase.TRAIN`` can be decided for a call that
passes ``phase=LoopPhase.VAL``. Only what the code shows counts: a module-level name bound once
in its file, a class attribute assigned once in the body of a class with no base but ``object``
or an enum base, a literal value, a command-line flag that holds one value
(``args.use_ema`` of ``add_argument("--use-ema", action="store_true", default=True)``:
``argparse_flags``). Anything else is ``UNKNOWN``.
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass
from math import prod
from typing import TYPE_CHECKING

from torchlint.analysis.argparse_flags import constant_flag
from torchlint.analysis.callers import project_call_sites
from torchlint.analysis.callgraph import parameter_default, site_argument
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.definitions import Definition, definition_at

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

UNKNOWN = object()

# Enum members equal to their values (``IntEnum.A == 0``): the literal value stands for them.
_VALUE_ENUMS = frozenset({"enum.IntEnum", "enum.StrEnum"})
# Members equal only to themselves (and to their aliases, members with the same value).
_PLAIN_ENUMS = frozenset({"enum.Enum"})


@dataclass(frozen=True)
class EnumMember:
    """A member of a plain ``enum.Enum``: equal to a member of the same class with the same value."""

    enum: str  # the class, by file and qualified name
    value: object


def constant_value(ctx: FileContext, expr: ast.AST):
    """The value ``expr`` holds wherever it is read, or ``UNKNOWN``."""
    if isinstance(expr, ast.Constant):
        return expr.value
    if isinstance(expr, ast.Name):
        if _is_parameter(ctx, expr):
            return UNKNOWN
        value = _module_constant(ctx, expr.id)
        return _local_constant(ctx, expr) if value is UNKNOWN else value
    if isinstance(expr, ast.Attribute):
        owner = _class_of(ctx, expr.value)
        if owner is not None:
            return _class_constant(owner, expr.attr)
        flag = constant_flag(ctx, expr)
        return UNKNOWN if flag is None else flag
    return UNKNOWN


def possible_values(ctx: FileContext, expr: ast.AST) -> tuple | None:
    """The values ``expr`` may hold where it is read: its one constant (``constant_value``), or each
    element of the literal every loop that binds it runs over (``for mode in ("a", "b"):``, also
    through a name bound once to one: ``for mode in MODES:``); None
    when anything else may reach it (a parameter, an assignment, a loop over a computed iterable)."""
    value = constant_value(ctx, expr)
    if value is not UNKNOWN:
        return (value,)
    if not isinstance(expr, ast.Name):
        return None
    bindings = dataflow(ctx).reaching(expr)
    found: list = []
    for binding in bindings:
        loop = binding.stmt
        if binding.kind != "for" or not isinstance(loop, (ast.For, ast.AsyncFor)) or not _plain_target(loop, expr.id):
            return None
        elements = _elements(ctx, loop.iter)
        if elements is None:
            return None
        found.extend(elements)
    return tuple(found) if bindings else None


def _elements(ctx: FileContext, iterable: ast.AST) -> tuple | None:
    """The constants a literal container holds (``("a", "b")``, or a name that stands for one)."""
    if isinstance(iterable, (ast.Tuple, ast.List, ast.Set)):
        values = [UNKNOWN if isinstance(e, ast.Starred) else constant_value(ctx, e) for e in iterable.elts]
        return None if any(v is UNKNOWN for v in values) else tuple(values)
    value = constant_value(ctx, iterable) if isinstance(iterable, ast.Name) else UNKNOWN
    return tuple(value) if isinstance(value, (tuple, list, frozenset, set)) else None


def _plain_target(loop: ast.For | ast.AsyncFor, name: str) -> bool:
    """Whether the loop binds ``name`` as its whole target (``for mode in ...``, not ``for mode, k in ...``)."""
    return isinstance(loop.target, ast.Name) and loop.target.id == name


def _is_parameter(ctx: FileContext, name: ast.Name) -> bool:
    """Whether a function around ``name`` has a parameter of that name (it shadows the module's)."""
    for ancestor in ctx.ancestors(name):
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            if name.id in {a.arg for a in ast.walk(ancestor.args) if isinstance(a, ast.arg)}:
                return True
    return False


def _literal(node: ast.AST):
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return UNKNOWN


def _module_constant(ctx: FileContext, name: str):
    """A name bound exactly once in its file, at the top level, to a literal; or imported by name
    from a project module where it is one."""
    stores = [n for n in ctx.nodes(ast.Name) if n.id == name and isinstance(n.ctx, ast.Store)]
    if len(stores) == 1:
        assign = ctx.parent(stores[0])
        if isinstance(assign, ast.Assign) and ctx.parent(assign) is ctx.tree and assign.targets == [stores[0]]:
            return _literal(assign.value)
        return UNKNOWN
    binding = ctx.imports.bindings.get(name)
    project = ctx.project
    if stores or binding is None or binding.name is None or project is None:
        return UNKNOWN
    module = project.resolve_import(ctx, binding.level, binding.module)
    source = project.context(module.path) if module is not None and module.file else None
    if source is None or source is ctx:
        return UNKNOWN
    return _module_constant(source, binding.name)


def _local_constant(ctx: FileContext, name: ast.Name):
    """A name bound exactly once in the function that reads it (or one around it), to a literal
    (``world_size = 1`` in ``main``): no other binding in that scope, whatever the order, and no
    ``global``/``nonlocal`` declaration that would let another function rebind it."""
    if ctx.enclosing_function(name) is None:
        return UNKNOWN
    value = dataflow(ctx).sole_value(name)
    if value is None or ctx.enclosing_function(value) is None:
        return UNKNOWN  # rebound, or a module-level name (``_module_constant`` decides those)
    if any(name.id in declared.names for declared in ctx.nodes(ast.Global, ast.Nonlocal)):
        return UNKNOWN
    return _literal(value)


def _class_of(ctx: FileContext, expr: ast.AST) -> Definition | None:
    found = ctx.project.lookup(ctx, expr) if ctx.project is not None else None
    if found is None and isinstance(expr, ast.Name):
        found = definition_at(ctx, [expr.id])
    return found if isinstance(found, Definition) and found.is_class else None


def _class_constant(owner: Definition, attr: str):
    """The value of a class attribute assigned once in the class body to a literal."""
    node = owner.node
    assigns = [
        stmt
        for stmt in node.body
        if isinstance(stmt, (ast.Assign, ast.AnnAssign))
        and attr
        in {t.id for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]) if isinstance(t, ast.Name)}
    ]
    if len(assigns) != 1 or assigns[0].value is None:
        return UNKNOWN
    kind = _class_kind(owner)
    value = assigns[0].value
    if kind == "plain-enum":
        if isinstance(value, ast.Call) and (owner.ctx.qualname(value.func) or "").endswith("auto"):
            return EnumMember(f"{owner.path}:{owner.qualname}", ("auto", attr))  # auto() values are distinct
        literal = _literal(value)
        return UNKNOWN if literal is UNKNOWN else EnumMember(f"{owner.path}:{owner.qualname}", literal)
    if kind == "plain":
        return _literal(value)
    return UNKNOWN


def _class_kind(owner: Definition) -> str | None:
    """ "plain" (no base but ``object``, or an enum whose members equal their values),
    "plain-enum" (``enum.Enum``), None (a base that may change what attributes hold)."""
    node = owner.node
    if node.keywords:
        return None  # a metaclass
    bases = [owner.ctx.qualname(b) or "" for b in node.bases]
    if all(b in ("object", "builtins.object") for b in bases):
        return "plain"
    if len(bases) == 1 and bases[0] in _PLAIN_ENUMS:
        return "plain-enum"
    if len(bases) == 1 and bases[0] in _VALUE_ENUMS:
        return "plain"
    return None


# How many combinations of element values a tuple literal may stand for before it is unknown.
_MAX_COMBINATIONS = 64
_MAX_VALUE_DEPTH = 6


def values_from_callers(ctx: FileContext, expr: ast.AST, depth: int = 0) -> tuple | None:
    """Every value ``expr`` may hold where it is read, following the data flow into the callers:
    a literal, a tuple or list of such values (``(1, 5)``), ``max(...)``/``min(...)`` of one, a name
    through every assignment that reaches it (``topk = (topk,)`` under a branch, the parameter
    otherwise), and a parameter of a top-level function through what every call of it in the project
    passes (its default where a call leaves it out; ``callers.project_call_sites``). None when any
    of those may be something else: a parameter whose calls cannot all be told or that has none (an
    API: a caller outside the project may pass anything), a computed value, a deep chain."""
    if depth > _MAX_VALUE_DEPTH:
        return None
    if isinstance(expr, ast.Constant):
        return (expr.value,)
    if isinstance(expr, (ast.Tuple, ast.List)):
        if any(isinstance(e, ast.Starred) for e in expr.elts):
            return None
        parts = [values_from_callers(ctx, e, depth + 1) for e in expr.elts]
        if any(p is None for p in parts) or prod(len(p) for p in parts) > _MAX_COMBINATIONS:
            return None
        return tuple(itertools.product(*parts))
    if isinstance(expr, ast.Call):
        return _reduced_values(ctx, expr, depth)
    if not isinstance(expr, ast.Name):
        return None
    value = constant_value(ctx, expr)
    if value is not UNKNOWN:
        return (value,)
    bindings = dataflow(ctx).reaching(expr)
    found: list = []
    for binding in bindings:
        if binding.kind == "assign" and binding.value is not None:
            values = values_from_callers(ctx, binding.value, depth + 1)
        elif binding.kind == "param":
            values = _parameter_values(ctx, binding.stmt, depth + 1)
        else:
            values = None
        if values is None:
            return None
        found.extend(values)
    return tuple(found) if bindings else None


def _reduced_values(ctx: FileContext, call: ast.Call, depth: int) -> tuple | None:
    """``max(topk)`` / ``min(sizes)`` of one iterable whose values are known; the builtin only. A
    number reaching it would make the call raise, so it gives no value."""
    func = call.func
    if not (isinstance(func, ast.Name) and func.id in ("max", "min")) or len(call.args) != 1 or call.keywords:
        return None
    if dataflow(ctx).reaching(func) or func.id in ctx.imports.bindings:
        return None  # a `max` of the file's own
    reduce = max if func.id == "max" else min
    values = values_from_callers(ctx, call.args[0], depth + 1)
    if values is None:
        return None
    found = []
    for value in values:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            continue  # `max(1)` raises: that value never gets past the call (`topk = (topk,)` for an int)
        if not isinstance(value, tuple) or not value:
            return None
        try:
            found.append(reduce(value))
        except TypeError:
            return None
    return tuple(found) if found else None


def _parameter_values(ctx: FileContext, param: ast.arg, depth: int) -> tuple | None:
    """What every call of the parameter's top-level function in the project passes for it."""
    function = ctx.parent(ctx.parent(param))
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    sites = project_call_sites(ctx, function)
    if not sites:
        return None  # unknown callers, or none: an API a caller outside the project may use
    default = parameter_default(function, param.arg)
    found: list = []
    for home, site in sites:
        given = site_argument(home, function, param, site)
        if given is None:
            return None
        values = values_from_callers(ctx if given is default else home, given, depth)
        if values is None:
            return None
        found.extend(values)
    return tuple(found)
