"""Code that runs only on an old PyTorch, judged from its branch conditions.

A branch runs under a PyTorch before some release when a condition around it (``conditions_at``)
holds only for versions before it: a comparison of the installed version with a version string
(``torch.__version__ < "0.4"``, ``LooseVersion(torch.__version__) < LooseVersion("0.4.0")``,
``torch_ver == "0.3"`` with ``torch_ver = torch.__version__[:3]`` bound once,
``torch.__version__.startswith("0.3")``), also as the ``else`` of ``>=`` and through ``not``/``and``.
The version read may be ``torch.__version__`` itself, a prefix of it (a slice from its start,
``.split(sep)[0]``), a version object parsed from one, or a name bound once to any of these.
A prefix decides an ordering only when it is at least as long as the version string it is
compared with (``torch.__version__[:1] < "0.4"`` holds for "0.4.1" too).

Why: before PyTorch 0.4 a call given a ``Variable(x, volatile=True)`` recorded no graph; since
then ``volatile`` is ignored. Code that wraps its input so only in a branch for the old releases
(``if torch_ver == "0.3": predict(...)`` and ``else: with torch.no_grad(): predict(...)``) never
records a graph on any release (``volatile_only_on_old_torch``). Nor does a call fed one in a file
written for a PyTorch before 1.0 (``target_version.written_before``: it reads a scalar's
``.data[0]``, or the project pins such a release): that file runs either on a release before 0.4,
where ``volatile`` works, or on one where its own old code raises (``target_version.volatile_in_old_code``).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.conditions import conditions_at, consequences
from torchlint.analysis.dataflow import dataflow
from torchlint.torchmodel import vocabulary as torch_names

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

# How much of the version an expression holds: all of it, a prefix of known length, a prefix of
# unknown length, or a parsed version object (compared semantically).
_WHOLE, _PARSED, _PREFIX = "whole", "parsed", "prefix"

# Tensor methods that move or cast a value and keep its autograd state (volatile included).
_MOVES = frozenset({"cuda", "cpu", "to", "float", "half", "double", "long", "contiguous"})

_MIRRORED = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE, ast.Eq: ast.Eq, ast.NotEq: ast.NotEq}
_NEGATED = {
    ast.Lt: ast.GtE,
    ast.LtE: ast.Gt,
    ast.Gt: ast.LtE,
    ast.GtE: ast.Lt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}


def takes_volatile_input(ctx: FileContext, call: ast.Call) -> bool:
    """Whether an argument of ``call`` is a ``Variable(..., volatile=True)``, moved or cast
    (``.cuda()``, ``.to(device)``) or through a name every binding of which holds one: before
    PyTorch 0.4 one volatile input made the whole call record no graph."""
    if "volatile" not in ctx.source:
        return False
    return any(_volatile(ctx, arg, 0) for arg in [*call.args, *(k.value for k in call.keywords)])


def _volatile(ctx: FileContext, expr: ast.AST, depth: int) -> bool:
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in _MOVES:
        expr = expr.func.value
    if isinstance(expr, ast.Call) and ctx.call_qualname(expr) in torch_names.VARIABLE_WRAPPERS:
        return any(
            k.arg == "volatile" and isinstance(k.value, ast.Constant) and k.value.value is True for k in expr.keywords
        )
    if isinstance(expr, ast.Name) and depth < 3:
        bindings = dataflow(ctx).reaching(expr)
        return bool(bindings) and all(
            b.kind == "assign" and b.value is not None and _volatile(ctx, b.value, depth + 1) for b in bindings
        )
    return False


def volatile_only_on_old_torch(ctx: FileContext, call: ast.Call, site: ast.AST) -> bool:
    """Whether ``call`` takes a volatile input and ``site`` (the call itself, or a call on the path
    into its function) runs only on a PyTorch before 0.4, where that input kept it from recording."""
    return takes_volatile_input(ctx, call) and runs_only_before(ctx, site, torch_names.VOLATILE_REMOVED_IN)


def runs_only_before(ctx: FileContext, node: ast.AST, release: tuple[int, ...]) -> bool:
    """Whether a branch condition around ``node`` (in its function) holds only on a PyTorch
    older than ``release``."""
    if "__version__" not in ctx.source:
        return False  # the common case, decided without a walk
    return any(
        _before(ctx, expr, truth, release)
        for test, value in conditions_at(ctx, node)
        for expr, truth in consequences(test, value)
    )


def _before(ctx: FileContext, expr: ast.AST, truth: bool, release: tuple[int, ...]) -> bool:
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "startswith":
        # `v.startswith("0.3")` true: the version begins with that string.
        return truth and _version_read(ctx, expr.func.value) is not None and _names_minor(expr.args, release)
    if not (isinstance(expr, ast.Compare) and len(expr.ops) == 1):
        return False
    op, left, right = type(expr.ops[0]), expr.left, expr.comparators[0]
    read = _version_read(ctx, left)
    if read is None:
        read, left, right, op = _version_read(ctx, right), right, left, _MIRRORED.get(op)
    if read is None or op is None:
        return False
    if not truth:
        op = _NEGATED.get(op)
    if op is ast.In and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
        return bool(right.elts) and all(_names_minor([e], release) for e in right.elts)
    bound = _version_string(ctx, right)
    if bound is None:
        return False
    parsed = parse_version(bound)
    if op is ast.Eq:
        return _names_minor([ast.Constant(bound)], release)
    if op not in (ast.Lt, ast.LtE) or parsed is None:
        return False
    kind, length = read
    if kind == _PREFIX and (length is None or length < len(bound)):
        return False  # `torch.__version__[:1] < "0.4"`: "0" is less, whatever the minor release
    parsed, release = padded(parsed, release), padded(release, parsed)
    return parsed <= release if op is ast.Lt else parsed < release


def padded(version: tuple[int, ...], other: tuple[int, ...]) -> tuple[int, ...]:
    """``version`` with zeros for the parts only ``other`` names ("0.4" is "0.4.0")."""
    return version + (0,) * (len(other) - len(version))


def _names_minor(args: list[ast.AST], release: tuple[int, ...]) -> bool:
    """The one argument is a version string naming at least a minor release, before ``release``."""
    if len(args) != 1 or not (isinstance(args[0], ast.Constant) and isinstance(args[0].value, str)):
        return False
    parsed = parse_version(args[0].value)
    return parsed is not None and len(parsed) >= 2 and parsed < release


def parse_version(text: str) -> tuple[int, ...] | None:
    parts = text.strip().split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) and parts else None


def _version_string(ctx: FileContext, expr: ast.AST) -> str | None:
    """A version string written in the code, bare or parsed (``LooseVersion("0.4.0")``)."""
    if isinstance(expr, ast.Call) and ctx.call_qualname(expr) in torch_names.VERSION_PARSERS and len(expr.args) == 1:
        expr = expr.args[0]
    return expr.value if isinstance(expr, ast.Constant) and isinstance(expr.value, str) else None


def _version_read(ctx: FileContext, expr: ast.AST, depth: int = 0) -> tuple[str, int | None] | None:
    """``(kind, prefix length)`` when ``expr`` holds the installed PyTorch's version (module
    docstring), else None."""
    if depth > 4:
        return None
    if isinstance(expr, ast.Attribute) and ctx.qualname(expr) == torch_names.TORCH_VERSION:
        return _WHOLE, None
    if isinstance(expr, ast.Name):
        value = dataflow(ctx).sole_value(expr)
        return _version_read(ctx, value, depth + 1) if value is not None else None
    if isinstance(expr, ast.Call) and ctx.call_qualname(expr) in torch_names.VERSION_PARSERS and len(expr.args) == 1:
        inner = _version_read(ctx, expr.args[0], depth + 1)
        return (_PARSED, None) if inner is not None and inner[0] != _PREFIX else None
    if isinstance(expr, ast.Subscript):
        return _prefix_read(ctx, expr, depth)
    return None


def _prefix_read(ctx: FileContext, expr: ast.Subscript, depth: int) -> tuple[str, int | None] | None:
    """A slice from the start of the whole version (``torch.__version__[:3]``), or the first part of
    it split (``torch.__version__.split("+")[0]``: its length unknown)."""
    index, value = expr.slice, expr.value
    if isinstance(index, ast.Slice):
        start, stop = index.lower, index.upper
        whole = _version_read(ctx, value, depth + 1) == (_WHOLE, None)
        if whole and index.step is None and (start is None or _int(start) == 0) and stop is not None:
            return (_PREFIX, _int(stop)) if _int(stop) is not None else None
        return None
    split = isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "split"
    if split and _int(index) == 0 and _version_read(ctx, value.func.value, depth + 1) == (_WHOLE, None):
        return _PREFIX, None
    return None


def _int(expr: ast.AST) -> int | None:
    return expr.value if isinstance(expr, ast.Constant) and type(expr.value) is int else None
