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
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.context import FUNCTION_TYPES
from torchlint.torchmodel import vocabulary as torch_names

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext


def runs_other_framework(ctx: FileContext, node: ast.AST) -> bool:
    """Whether ``node`` is code that can only run another framework's models (see the module doc)."""
    imported = ctx.shared("framework-imports", lambda: _framework_imports(ctx))
    top_level = imported.get(None, set())
    if not top_level & torch_names.OTHER_FRAMEWORKS or top_level & torch_names.TORCH_PACKAGES:
        return False
    return not any(
        imported.get(scope, set()) & torch_names.TORCH_PACKAGES
        for scope in ctx.ancestors(node)
        if isinstance(scope, FUNCTION_TYPES)
    )


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
