"""What a list, tuple or set may hold: the expressions that may have produced its elements.

A container is followed through its bindings (``models = list()``, a parameter to what every call
site passes), literals (``[a, b]``, ``[*xs, c]``), slices (``models[:k]``), what a function of the file returns, copies (``list(xs)``,
``sorted(xs)``), comprehensions (their element), and what is added to it by name in the scope
that binds it (``models.append(m)``, ``models.extend(ms)``, ``models.insert(i, m)``), or
``models += [m]``. Each element is then followed with ``Dataflow.origins``. ``None`` among the
results stands for an element that cannot be told (a container from a call, an attribute, a
parameter with no call site in the file); callers treat it as unknown.
"""

from __future__ import annotations

import ast

from torchlint.analysis.callgraph import parameter_arguments, resolve_local_call
from torchlint.analysis.context import FileContext
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.nodes import returns_of

# Builtins whose result holds the elements of their (only) iterable argument.
_COPYING_BUILTINS = frozenset({"list", "tuple", "set", "frozenset", "sorted", "reversed"})
# Methods that add one element (``append``/``insert``: the last argument) or many (``extend``).
_ADDING_ONE = frozenset({"append", "add", "insert"})
_ADDING_MANY = frozenset({"extend", "update"})
_MAX_DEPTH = 8


def element_origins(ctx: FileContext, container: ast.AST, depth: int = 0) -> list[ast.AST | None]:
    """The expressions that may have produced the elements of ``container``; ``None`` for an
    element that cannot be told. An empty list means the container is known to be empty."""
    if depth > _MAX_DEPTH:
        return [None]
    if isinstance(container, ast.Name):
        return _of_name(ctx, container, depth)
    if isinstance(container, (ast.List, ast.Tuple, ast.Set)):
        found: list[ast.AST | None] = []
        for element in container.elts:
            if isinstance(element, ast.Starred):
                found += element_origins(ctx, element.value, depth + 1)
            else:
                found += dataflow(ctx).origins(element, parameters=True)
        return found
    if isinstance(container, ast.Subscript) and isinstance(container.slice, ast.Slice):
        return element_origins(ctx, container.value, depth + 1)
    if isinstance(container, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
        return dataflow(ctx).origins(container.elt, parameters=True)
    if isinstance(container, ast.IfExp):
        return element_origins(ctx, container.body, depth + 1) + element_origins(ctx, container.orelse, depth + 1)
    if isinstance(container, ast.Call) and is_copying_call(ctx, container):
        if not container.args and not container.keywords:
            return []
        if len(container.args) == 1 and not container.keywords:
            return element_origins(ctx, container.args[0], depth + 1)
    if isinstance(container, ast.Call):
        return _returned(ctx, container, depth)
    return [None]


def is_copying_call(ctx: FileContext, call: ast.Call) -> bool:
    """``list(xs)``, ``sorted(xs)``, ``tuple()``: a builtin whose result holds its argument's elements."""
    return _is_builtin(ctx, call.func, _COPYING_BUILTINS)


# Builtins that build a mapping or a set: neither supports ``+``.
_UNADDABLE_BUILDERS = frozenset({"dict", "set", "frozenset"})


def only_unaddable(ctx: FileContext, name: ast.Name, at: ast.AST) -> bool:
    """Whether every value ``name`` may hold at ``at`` is a dict or a set built where it is bound
    (a display, a comprehension, ``dict(...)``/``set(...)``), following its augmented assignments
    back to what it held before them: ``d += x`` on such a value raises ``TypeError`` (neither
    type has ``+``), so no augmented assignment ever turns it into something else."""
    flow = dataflow(ctx)
    seen: set[int] = set()
    pending = [(name.id, at)]
    found = False
    while pending:
        key, where = pending.pop()
        bindings = flow.reaching(key, where)
        if not bindings:
            return False
        for binding in bindings:
            if id(binding.stmt) in seen:
                continue
            seen.add(id(binding.stmt))
            if binding.kind == "augassign":
                pending.append((key, binding.stmt))
                continue
            value = binding.value if binding.kind == "assign" else None
            if not (
                isinstance(value, (ast.Dict, ast.DictComp, ast.Set, ast.SetComp))
                or (isinstance(value, ast.Call) and _is_builtin(ctx, value.func, _UNADDABLE_BUILDERS))
            ):
                return False
            found = True
    return found


def _returned(ctx: FileContext, call: ast.Call, depth: int) -> list[ast.AST | None]:
    """The elements of what a function of this file returns (``models = fit_ensemble(X, y)``)."""
    function = resolve_local_call(ctx, call)
    returns = returns_of(function) if function is not None else []
    if not returns or any(r.value is None for r in returns):
        return [None]
    return [e for r in returns for e in element_origins(ctx, r.value, depth + 1)]


def _is_builtin(ctx: FileContext, func: ast.AST, names: frozenset[str]) -> bool:
    """``func`` names one of the builtins ``names``, not shadowed by a binding of the file."""
    return isinstance(func, ast.Name) and func.id in names and not dataflow(ctx).reaching(func)


def _of_name(ctx: FileContext, name: ast.Name, depth: int, at: ast.AST | None = None) -> list[ast.AST | None]:
    flow = dataflow(ctx)
    bindings = flow.reaching(name.id, at or name)
    if not bindings or depth > _MAX_DEPTH:
        return [None]
    found: list[ast.AST | None] = []
    for binding in bindings:
        if binding.kind == "assign" and binding.value is not None:
            found += element_origins(ctx, binding.value, depth + 1)
        elif binding.kind == "param":
            found += _of_parameter(ctx, binding.stmt, depth)
        elif binding.kind == "augassign" and isinstance(binding.stmt, ast.AugAssign):
            # `layers += [...]`: what it held before, and what is added
            found += element_origins(ctx, binding.stmt.value, depth + 1)
            found += _of_name(ctx, name, depth + 1, at=binding.stmt.value)
        else:
            return [None]
    return found + _added(ctx, name, flow.scope_of(bindings[0].stmt), depth)


def _of_parameter(ctx: FileContext, param: ast.arg, depth: int) -> list[ast.AST | None]:
    function = ctx.parent(ctx.parent(param))
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [None]
    values = parameter_arguments(ctx, function, param)
    if not values:
        return [None]  # no call site in this file: the caller is unknown
    found: list[ast.AST | None] = []
    for value in values:
        found += [None] if value is None else element_origins(ctx, value, depth + 1)
    return found


def _added(ctx: FileContext, name: ast.Name, scope: ast.AST, depth: int) -> list[ast.AST | None]:
    """What the scope that binds ``name`` adds to it by that name."""
    flow = dataflow(ctx)
    found: list[ast.AST | None] = []
    for value, many in additions(ctx, name.id, scope):
        if value is None:
            found.append(None)
        elif many:
            found += element_origins(ctx, value, depth + 1)
        else:
            found += flow.origins(value, parameters=True)
    return found


def additions(ctx: FileContext, name: str, scope: ast.AST, items: bool = False) -> list[tuple[ast.AST | None, bool]]:
    """What ``scope`` adds by method to the container it binds to ``name``: ``(value, many)`` for
    ``name.append(value)`` / ``name.insert(i, value)`` (one element), ``name.extend(values)`` (many),
    ``(None, False)`` for an adding call with no argument; with ``items``, also ``name[i] = value``
    (an element written in place; a mapping's value, which iterating the mapping does not yield)."""
    index = ctx.shared("container-additions", lambda: _index_additions(ctx))
    return [(value, many) for value, many, is_item in index.get((scope, name), []) if items or not is_item]


def _index_additions(ctx: FileContext) -> dict:
    """Every addition of the file, by (scope, container name): ``(value, many, item store)``."""
    flow = dataflow(ctx)
    index: dict = {}
    for node in ctx.nodes(ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if func.attr in _ADDING_ONE | _ADDING_MANY:
                value = node.args[-1] if func.attr in _ADDING_ONE and node.args else node.args[0] if node.args else None
                entry = (value, func.attr in _ADDING_MANY and value is not None, False)
                index.setdefault((flow.scope_of(node), func.value.id), []).append(entry)
    for node in ctx.nodes(ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                index.setdefault((flow.scope_of(node), target.value.id), []).append((node.value, False, True))
    return index


def item_origins(ctx: FileContext, read: ast.Subscript) -> list[ast.AST | None]:
    """What ``d[k]`` may be, for a mapping ``d`` bound by name: the values of the dict literal it is
    bound to and of every ``d[...] = v`` in the file (a registry filled under ``__main__``, read in
    a request handler). ``None`` for what cannot be told: ``d`` bound otherwise, or never filled."""
    flow = dataflow(ctx)
    found: list[ast.AST | None] = []
    for value in written_items(ctx, read, mappings_only=True):
        found += [None] if value is None else flow.origins(value)
    return found or [None]


def written_items(ctx: FileContext, read: ast.Subscript, mappings_only: bool = False) -> list[ast.expr | None]:
    """What ``c[k]`` may be, as the file writes it: the values of the dict literal (or, unless
    ``mappings_only``, the elements of the list or tuple literal) the name ``c`` is bound to, and
    every ``c[...] = v``. ``None`` for what cannot be told: ``c`` bound otherwise, entries spread in
    from elsewhere (``{**other}``, ``[*xs]``), or added by a method (``c.update(...)``,
    ``c.append(...)``) whose entries are not followed here."""
    container = read.value
    if not isinstance(container, ast.Name) or isinstance(read.slice, ast.Slice):
        return [None]
    flow = dataflow(ctx)
    literals = (ast.Dict,) if mappings_only else (ast.Dict, ast.List, ast.Tuple)
    found: list[ast.expr | None] = []
    for binding in flow.reaching(container.id, read) or flow.bindings_anywhere(container.id):
        literal = binding.value
        if not (binding.kind == "assign" and isinstance(literal, literals)):
            return [None]
        values = literal.values if isinstance(literal, ast.Dict) else literal.elts
        if (isinstance(literal, ast.Dict) and None in literal.keys) or any(isinstance(v, ast.Starred) for v in values):
            return [None]  # `{**other}`, `[*xs]`: entries from elsewhere
        found += values
    for node in ctx.nodes(ast.Assign, ast.Call):
        if isinstance(node, ast.Call):
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == container.id
                and func.attr in _ADDING_ONE | _ADDING_MANY | {"setdefault"}
            ):
                found.append(None)
            continue
        for target in node.targets:
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                if target.value.id == container.id:
                    found.append(node.value)
    return found


def loop_target_values(ctx: FileContext, binding) -> list[ast.AST | None]:
    """What a ``for`` binding (``dataflow.Binding`` of kind "for") may hold: the elements of the
    iterable (``element_origins``), the values of a dict display it runs over by ``.values()`` or,
    for the second name of ``for k, v in d.items()``, by ``.items()``, and the matching member of
    each literal tuple for a name unpacked from them (``for name, make in [("sgd", f), ...]``).
    ``None`` for what cannot be told."""
    iterable, index = binding.source, binding.index
    if not isinstance(binding.stmt, (ast.For, ast.AsyncFor)) or iterable is None:
        return [None]
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) and not iterable.args:
        method = iterable.func.attr
        if (method == "values" and index is None) or (method == "items" and index == 1):
            return _dict_values(ctx, iterable.func.value)
        return [None]
    elements = element_origins(ctx, iterable)
    if index is None:
        return elements
    found: list[ast.AST | None] = []
    for element in elements:
        if isinstance(element, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in element.elts):
            found.append(element.elts[index] if index < len(element.elts) else None)
        else:
            found.append(None)
    return found


def _dict_values(ctx: FileContext, mapping: ast.AST) -> list[ast.AST | None]:
    """The values of the dict display ``mapping`` is bound to (``None`` when it is bound otherwise)."""
    if not isinstance(mapping, ast.Name):
        return [None]
    bindings = dataflow(ctx).reaching(mapping)
    found: list[ast.AST | None] = []
    for binding in bindings:
        literal = binding.value
        if binding.kind != "assign" or not isinstance(literal, ast.Dict) or None in literal.keys:
            return [None]
        found += literal.values
    for node in ctx.nodes(ast.Assign, ast.Call):  # entries written or merged in elsewhere are not followed
        touched = (
            [t.value for t in node.targets if isinstance(t, ast.Subscript)] if isinstance(node, ast.Assign) else []
        )
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _ADDING_MANY:
            touched.append(node.func.value)
        if any(isinstance(t, ast.Name) and t.id == mapping.id for t in touched):
            found.append(None)
    return found or [None]
