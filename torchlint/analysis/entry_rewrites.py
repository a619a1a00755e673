"""Loops that rewrite every entry of a dict in place: ``for k, v in d.items(): d[k] = f(v)``.

After such a loop each entry of ``d`` holds what the loop wrote for it, whatever it held before,
provided the write is the first thing each iteration does that could not be skipped: a
``continue``, ``break``, ``return`` or ``raise`` before it, or a write under a branch, leaves some
entries as they were. Shown, else unknown: a loop over anything but the dict's own keys or
items, or a write to the dict (or a rebinding of its name) between the loop and the read, answers
None.
"""

from __future__ import annotations

import ast

from torchlint.analysis.context import FUNCTION_TYPES, FileContext
from torchlint.analysis.nodes import method_call
from torchlint.analysis.reachability import block_holding

_LOOPS = (ast.For, ast.AsyncFor)
# Wrappers that iterate what their argument iterates (``list(d.items())``, ``sorted(d)``).
_COPYING_ITERATIONS = frozenset({"list", "tuple", "sorted"})
# Calls that read a dict handed to them and never write into it.
_READING_BUILTINS = frozenset({"len", "print", "str", "repr", "list", "sorted", "dict", "tuple", "iter"})
_SKIPS = (ast.Continue, ast.Break, ast.Return, ast.Raise)


def rewritten_entries(ctx: FileContext, read: ast.Subscript, at: ast.AST) -> ast.expr | None:
    """The value that the latest loop before ``at`` wrote into every entry of the dict ``read``
    reads from (``d["loss"]`` with ``d`` a name), or None when no such loop is shown."""
    if not isinstance(read.value, ast.Name) or isinstance(read.slice, ast.Slice):
        return None
    name = read.value.id
    child = at
    for ancestor in ctx.ancestors(at):
        if isinstance(ancestor, (*FUNCTION_TYPES, ast.Lambda, ast.ClassDef)):
            return None
        block = block_holding(ancestor, child) or []
        for earlier in reversed(block[: next((i for i, s in enumerate(block) if s is child), 0)]):
            if isinstance(earlier, _LOOPS):
                value = _entry_write(earlier, name)
                if value is not None:
                    return value
            if _writes(ctx, earlier, name):
                return None
        if isinstance(ancestor, (*_LOOPS, ast.While)) and _writes(ctx, ancestor, name):
            return None  # a later iteration reads what an earlier one wrote after the loop found above
        child = ancestor
    return None


def _entry_write(loop: ast.For | ast.AsyncFor, name: str) -> ast.expr | None:
    """``value`` of ``name[key] = value``, written by every iteration of ``loop`` over the keys of
    the dict ``name`` (``key`` the loop's key variable) before anything could skip it."""
    key = _key_variable(loop.target, loop.iter, name)
    if key is None or loop.orelse:
        return None
    for statement in loop.body:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(target := statement.targets[0], ast.Subscript)
            and isinstance(target.value, ast.Name)
            and target.value.id == name
            and isinstance(target.slice, ast.Name)
            and target.slice.id == key
        ):
            return statement.value
        for node in ast.walk(statement):
            if isinstance(node, _SKIPS) or (isinstance(node, ast.Name) and node.id == key and _is_store(node)):
                return None  # an iteration may end, or lose its key, before the write
    return None


def _key_variable(target: ast.AST, iterable: ast.AST, name: str) -> str | None:
    """The name bound to each key when ``for target in iterable`` runs over the dict ``name``."""
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and len(iterable.args) == 1:
        if iterable.func.id == "enumerate" and isinstance(target, ast.Tuple) and len(target.elts) == 2:
            return _key_variable(target.elts[1], iterable.args[0], name)
        if iterable.func.id in _COPYING_ITERATIONS:
            return _key_variable(target, iterable.args[0], name)
        return None
    over = _iterated_dict(iterable)
    if over is None or over[0] != name:
        return None
    if over[1] == "items":
        if isinstance(target, ast.Tuple) and len(target.elts) == 2:
            target = target.elts[0]
        else:
            return None
    return target.id if isinstance(target, ast.Name) else None


def _iterated_dict(iterable: ast.AST) -> tuple[str, str] | None:
    """(dict name, "keys" or "items") for ``d``, ``d.keys()``, ``d.items()``."""
    if isinstance(iterable, ast.Name):
        return iterable.id, "keys"
    found = method_call(iterable)
    if found is not None and found[0] in ("keys", "items") and isinstance(found[1], ast.Name):
        return found[1].id, found[0]
    return None


def _writes(ctx: FileContext, node: ast.AST, name: str) -> bool:
    """Whether ``node`` may rebind ``name`` or change the entries of the dict it names: a store,
    a subscript write or deletion, a method call on it (``d.update(...)``), or handing it to a
    call that is not a known reader."""
    for sub in ast.walk(node):
        if not isinstance(sub, ast.Name) or sub.id != name:
            continue
        if _is_store(sub):
            return True
        parent = ctx.parent(sub)
        if isinstance(parent, ast.Subscript) and parent.value is sub and not isinstance(parent.ctx, ast.Load):
            return True
        if isinstance(parent, ast.Attribute) and parent.attr not in ("get", "keys", "items", "values"):
            return True
        if isinstance(parent, ast.Call) and sub in parent.args:
            if not (isinstance(parent.func, ast.Name) and parent.func.id in _READING_BUILTINS):
                return True
    return False


def _is_store(name: ast.Name) -> bool:
    return isinstance(name.ctx, (ast.Store, ast.Del))
