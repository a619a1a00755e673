"""What a function leaves behind besides its assertions.

``only_asserts(func)``: the function's only outcome is the checks it makes. It asserts (an
``assert`` statement, or a call of an ``assert*`` function or method: ``np.testing.assert_allclose``,
``self.assertEqual``), returns no value and yields nothing, declares nothing ``global`` or
``nonlocal``, stores nothing on ``self``, and calls nothing that shows, logs or writes a result
(``print``, ``logger.info``, ``writer.add_scalar``, ``json.dump``, ``torch.save``,
``meter.update``...). Such a function is a check of the code's behaviour: what it computes is
only compared, never reported or kept. Nested functions and classes are not looked into.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from torchlint.analysis.nodes import last_name, returns_of, walk_no_scopes

# Calls that show, log, write or keep a result somewhere outside the function.
_OUTCOME_CALL = re.compile(
    r"^(print|pprint|log|debug|info|warning|warn|error|critical|write|writelines|save\w*|dump\w*|"
    r"add_\w+|update|append|extend|put|send|emit|show|imshow|savefig|display|record\w*|report\w*)$"
)


def asserts(func: ast.AST) -> bool:
    """An ``assert`` statement or a call of an ``assert*`` function/method in ``func`` (or in a
    function nested in it: a test's local checker)."""
    return any(True for _ in assertions(func))


def assertions(func: ast.AST) -> Iterator[ast.AST]:
    """What ``func`` and the functions nested in it assert: each ``assert``'s condition, and each
    call of an ``assert*`` function or method (``self.assertEqual(...)``) whole."""
    for node in ast.walk(func):
        if isinstance(node, ast.Assert):
            yield node.test
        elif isinstance(node, ast.Call) and (last_name(node.func) or "").startswith("assert"):
            yield node


def only_asserts(func: ast.AST) -> bool:
    """Whether asserting is all ``func`` does that anyone can see (see the module)."""
    if not asserts(func) or any(r.value is not None for r in returns_of(func)):
        return False
    for node in walk_no_scopes(func):
        if node is func:
            continue
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Global, ast.Nonlocal)):
            return False
        if isinstance(node, ast.Call) and _OUTCOME_CALL.match(last_name(node.func) or ""):
            return False
        if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Store):
            root = node.value
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name) and root.id == "self":
                return False
    return True
