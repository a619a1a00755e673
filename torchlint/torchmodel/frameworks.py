"""Code that runs another deep-learning framework's models, not PyTorch's.

A repository may hold PyTorch and TensorFlow (or JAX, Keras...) code side by side, and a model
call there looks the same in both. Whether a receiver is a torch model is usually unknown; it is
*shown* not to be when the code around it can only see another framework:

* the file imports another framework at its top level (``import tensorflow as tf``, also under
  ``if is_tf_available():``) and nothing of PyTorch there (``torch``, or a library built only on
  it: ``vocabulary.TORCH_PACKAGES``), and
* no function around the code imports PyTorch itself (a TensorFlow test module whose one
  cross-check imports ``torch`` inside its own function keeps that function torch code).

Such code gets no PyTorch findings. Everything else keeps its "may be torch" reading: a file
that imports no framework at all (its models come from its own modules) is judged as before.

In a file that imports PyTorch *and* another framework, each call is judged by where its values
come from (``foreign_call``): a value another framework produced (a call resolved through the
imports to ``tensorflow``, ``keras``, ``jax``..., an instance of a class of the file deriving from
such a framework's base, a function that framework wraps: ``tf.function(step)``,
``@tf.function``) is no torch tensor nor torch module. A call whose callee is such a value, or
whose every input is, runs no torch forward and records no autograd graph. Where a value's origin
cannot be told, the call keeps its "may be torch" reading.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.context import FUNCTION_TYPES
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.imports import dotted_name
from torchlint.torchmodel import vocabulary as torch_names

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext


def runs_other_framework(ctx: FileContext, node: ast.AST) -> bool:
    """Whether ``node`` is code that can only run another framework's models, or a call shown to
    run one (see the module doc)."""
    if isinstance(node, ast.Call) and foreign_call(ctx, node):
        return True
    imported = ctx.shared("framework-imports", lambda: _framework_imports(ctx))
    top_level = imported.get(None, set())
    if not top_level & torch_names.OTHER_FRAMEWORKS or top_level & torch_names.TORCH_PACKAGES:
        return False
    return not any(
        imported.get(scope, set()) & torch_names.TORCH_PACKAGES
        for scope in ctx.ancestors(node)
        if isinstance(scope, FUNCTION_TYPES)
    )


def foreign_call(ctx: FileContext, call: ast.Call) -> bool:
    """Whether ``call`` is shown to run another framework's code (see the module doc): its callee,
    or the object it is a method of, was built by that framework, or every value it is fed was."""
    if not _imports_other_framework(ctx):
        return False  # the common case, a torch-only file: nothing to trace
    answers = ctx.shared("foreign-calls", dict)
    answer = answers.get(id(call))
    if answer is None:
        answer = answers[id(call)] = _foreign_call(ctx, call, 0)
    return answer


# How many calls deep a value's origin is followed (a Keras model's output fed to another).
_MAX_DEPTH = 3


def _foreign_call(ctx: FileContext, call: ast.Call, depth: int) -> bool:
    func = call.func
    qual = ctx.call_qualname(call)
    if qual is not None:
        return qual.split(".", 1)[0] in torch_names.OTHER_FRAMEWORKS
    if isinstance(func, ast.Name) and func.id in ctx.classes:
        return func.id in _foreign_classes(ctx)
    if _foreign_function(ctx, func):
        return True
    if depth >= _MAX_DEPTH:
        return False
    callee = func.value if isinstance(func, ast.Attribute) else func
    if _foreign_value(ctx, callee, depth + 1):
        return True
    inputs = [a.value if isinstance(a, ast.Starred) else a for a in call.args]
    inputs += [k.value for k in call.keywords]
    inputs = [a for a in inputs if not isinstance(a, ast.Constant)]
    return bool(inputs) and all(_foreign_value(ctx, a, depth + 1) for a in inputs)


def _foreign_value(ctx: FileContext, expr: ast.AST, depth: int) -> bool:
    """Whether every value ``expr`` may hold was produced by another framework."""
    origins = dataflow(ctx).origins(expr, parameters=True)
    return bool(origins) and all(isinstance(o, ast.Call) and _foreign_call(ctx, o, depth) for o in origins)


def _foreign_function(ctx: FileContext, func: ast.AST) -> bool:
    """A function of this file (``step(x)``, ``self.step(x)``) that another framework wraps."""
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    definitions = ctx.functions.get(name, []) if name else []
    return bool(definitions) and all(
        any(_framework_name(ctx, d.func if isinstance(d, ast.Call) else d) for d in f.decorator_list)
        for f in definitions
    )


def _foreign_classes(ctx: FileContext) -> frozenset[str]:
    """Classes of this file deriving, directly or through each other, from another framework's base
    (``class Net(tf.keras.Model)``, ``class Block(keras.layers.Layer)``)."""

    def build() -> frozenset[str]:
        found: set[str] = set()
        changed = True
        while changed:
            changed = False
            for name, cls in ctx.classes.items():
                if name not in found and any(_framework_name(ctx, b) or dotted_name(b) in found for b in cls.bases):
                    found.add(name)
                    changed = True
        return frozenset(found)

    return ctx.shared("foreign-classes", build)


def _framework_name(ctx: FileContext, expr: ast.AST) -> bool:
    qual = ctx.qualname(expr)
    return qual is not None and qual.split(".", 1)[0] in torch_names.OTHER_FRAMEWORKS


def _imports_other_framework(ctx: FileContext) -> bool:
    """Whether any code of the file imports another framework (asked for every model call: kept)."""

    def build() -> bool:
        imported = ctx.shared("framework-imports", lambda: _framework_imports(ctx))
        return any(roots & torch_names.OTHER_FRAMEWORKS for roots in imported.values())

    return ctx.shared("imports-other-framework", build)


def _framework_imports(ctx: FileContext) -> dict[ast.AST | None, set[str]]:
    """The top-level packages each function imports (None: the module's top level)."""
    found: dict[ast.AST | None, set[str]] = {}
    for node in ctx.nodes(ast.Import, ast.ImportFrom):
        if isinstance(node, ast.ImportFrom):
            if node.level or not node.module:
                continue  # relative: the project's own modules
            roots = {node.module.split(".", 1)[0]}
        else:
            roots = {alias.name.split(".", 1)[0] for alias in node.names}
        found.setdefault(ctx.enclosing_function(node), set()).update(roots)
    return found
