"""Command-line flags that can only hold one value.

``parser.add_argument("--use-ema", action="store_true", default=True)`` stores ``True`` when the
flag is given and leaves the default, ``True``, when it is not: ``args.use_ema`` is ``True`` on
every command line (``store_false`` with ``default=False`` is always ``False``).
``constant_flag(ctx, expr)`` gives that value for ``args.use_ema`` when the code shows it:

* ``args`` holds (data flow, parameters followed to this file's call sites) the result of one
  ``<parser>.parse_args(...)`` call, without a ``namespace=`` of its own;
* ``<parser>`` is one ``argparse.ArgumentParser(...)`` without ``parents=``, and the flag was
  declared on it (or on a group of it);
* no other ``add_argument`` of the file writes the same destination, no ``set_defaults`` of the
  file may change its default, and nothing in the file assigns that attribute (``x.use_ema = ...``,
  ``setattr``), nor writes a namespace through ``vars(...)`` or ``__dict__``.

Anything else is unknown (None). Only files that mention ``store_true``/``store_false`` are read.
Nothing here knows about PyTorch.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.nodes import keyword

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

_PARSERS = frozenset({"argparse.ArgumentParser"})
_GROUPS = frozenset({"add_argument_group", "add_mutually_exclusive_group"})
# The value an action stores when its flag is given; with the same default it is the only value.
_FIXED_ACTIONS = {"store_true": True, "store_false": False}
# Methods that change a mapping in place (a namespace reached through ``vars(args)``/``__dict__``).
_MUTATORS = frozenset({"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"})


def constant_flag(ctx: FileContext, expr: ast.Attribute) -> bool | None:
    """The one value ``args.<dest>`` can hold (see the module docstring), or None."""
    if not isinstance(expr.value, ast.Name):
        return None
    flags = ctx.shared("argparse-constant-flags", lambda: _constant_flags(ctx))
    declared = flags.get(expr.attr)
    if declared is None:
        return None
    parser, value = declared
    origins = dataflow(ctx).origins(expr.value, parameters=True)
    if len(origins) != 1 or not _parses(ctx, origins[0], parser):
        return None
    return value


def _constant_flags(ctx: FileContext) -> dict[str, tuple[ast.AST, bool]]:
    """Destination -> (the parser construction that declares it, its one value), for the flags of
    this file that hold one value and that nothing else in the file may write."""
    if "store_true" not in ctx.source and "store_false" not in ctx.source:
        return {}
    writers: dict[str, int] = {}
    candidates: dict[str, tuple[ast.AST, bool]] = {}
    for call in ctx.calls:
        func = call.func
        if not isinstance(func, ast.Attribute) or func.attr != "add_argument":
            continue
        dest = _destination(call)
        if dest is None:
            return {}  # a destination that cannot be told may be any of them
        writers[dest] = writers.get(dest, 0) + 1
        value = _fixed_value(call)
        parser = _parser_of(ctx, func.value)
        if value is not None and parser is not None:
            candidates[dest] = (parser, value)
    written = _written_attributes(ctx)
    if written is None:
        return {}
    return {dest: found for dest, found in candidates.items() if writers[dest] == 1 and dest not in written}


def _keyword_value(call: ast.Call, name: str) -> ast.AST | None:
    found = keyword(call, name)
    return None if found is None else found.value


def _destination(call: ast.Call) -> str | None:
    """Where ``add_argument`` stores its value: ``dest=``, else the first long option with dashes
    made underscores, else the first option (a positional's name)."""
    if any(k.arg is None for k in call.keywords):
        return None  # ``**options`` may hold a ``dest``
    dest = _keyword_value(call, "dest")
    if dest is not None:
        return dest.value if isinstance(dest, ast.Constant) and isinstance(dest.value, str) else None
    names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if len(names) != len(call.args) or not names:
        return None
    long = next((n for n in names if n.startswith("--")), None)
    return (long or names[0]).lstrip("-").replace("-", "_") or None


def _fixed_value(call: ast.Call) -> bool | None:
    """The one value of a ``store_true`` flag defaulting to true (``store_false`` to false)."""
    action, default = _keyword_value(call, "action"), _keyword_value(call, "default")
    if not (isinstance(action, ast.Constant) and isinstance(default, ast.Constant)):
        return None
    value = _FIXED_ACTIONS.get(action.value) if isinstance(action.value, str) else None
    return value if value is not None and default.value is value else None


def _parser_of(ctx: FileContext, receiver: ast.AST) -> ast.AST | None:
    """The one ``ArgumentParser(...)`` construction ``receiver`` holds, through the groups made from it."""
    origins = dataflow(ctx).origins(receiver)
    if len(origins) != 1 or not isinstance(origins[0], ast.Call):
        return None
    made = origins[0]
    if ctx.call_qualname(made) in _PARSERS:
        return None if _keyword_value(made, "parents") is not None else made
    if isinstance(made.func, ast.Attribute) and made.func.attr in _GROUPS:
        return _parser_of(ctx, made.func.value)
    return None


def _parses(ctx: FileContext, origin: ast.AST | None, parser: ast.AST) -> bool:
    """``origin`` is ``<parser>.parse_args(...)`` of that parser, into a fresh namespace."""
    return (
        isinstance(origin, ast.Call)
        and isinstance(origin.func, ast.Attribute)
        and origin.func.attr == "parse_args"
        and len(origin.args) <= 1
        and _keyword_value(origin, "namespace") is None
        and _parser_of(ctx, origin.func.value) is parser
    )


def _written_attributes(ctx: FileContext) -> set[str] | None:
    """Attribute names the file assigns or deletes on any object (``args.lr = ...``, ``setattr(o,
    "lr", ...)``, ``set_defaults(lr=...)``); None when a write by a computed name may reach any
    (``setattr(args, key, v)``, ``set_defaults(**cfg)``, ``vars(args)[k] = v``, ``args.__dict__.update(cfg)``)."""
    written: set[str] = set()
    for node in ctx.nodes(ast.Attribute):
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            written.add(node.attr)
        elif node.attr == "__dict__" and _written_through(ctx, node):
            return None
    for call in ctx.calls:
        func = call.func
        if isinstance(func, ast.Name) and func.id in ("setattr", "delattr"):
            name = call.args[1] if len(call.args) > 1 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                return None
            written.add(name.value)
        elif isinstance(func, ast.Name) and func.id == "vars" and _written_through(ctx, call):
            return None
        elif isinstance(func, ast.Attribute) and func.attr == "set_defaults":
            if any(keyword.arg is None for keyword in call.keywords):
                return None
            written.update(keyword.arg for keyword in call.keywords if keyword.arg is not None)
    return written


def _written_through(ctx: FileContext, mapping: ast.AST) -> bool:
    """A namespace's attribute mapping (``vars(args)``, ``args.__dict__``) written in place
    (``[k] = v``, ``.update(...)``), or kept under a name that may be (``d = vars(args)``).
    Handing it to a call (``print(vars(args))``, ``json.dump(vars(args), f)``) only reads it."""
    parent = ctx.parent(mapping)
    if isinstance(parent, ast.Subscript):
        return not isinstance(parent.ctx, ast.Load)
    if isinstance(parent, ast.Attribute):
        return parent.attr in _MUTATORS
    return isinstance(parent, (ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.AugAssign))
