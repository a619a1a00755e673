"""Attributes of ``self`` named at run time, and the methods a class runs.

``getattr(self, "net_" + name)`` may name any attribute of ``self`` whose name starts with
``"net_"``: the pix2pix/CycleGAN family of code bases keeps a list of network names
(``self.model_names = ["G", "D"]``) and loops over it in a base class to load, save or switch
each ``self.net<name>``. ``self_attribute_prefix(expr)`` is that constant prefix (``""`` when the
whole name is computed), else None (a constant name, or not ``getattr`` on ``self``).

``methods_run_by(cls)`` are the methods of a class that its own code runs: each method it
defines, and what they call on ``self`` (``self.load_networks(...)``), through ``super()`` or
a base class by name (``BaseModel.initialize(self, opt)``), followed into project base classes
in other files. A ``self.m(...)`` in a base class runs the most derived ``m``, so it is looked up
from the class asked about.
"""

from __future__ import annotations

import ast

from torchlint.analysis.callgraph import find_method, resolve_call
from torchlint.analysis.definitions import FUNCTION_NODES, Definition
from torchlint.analysis.nodes import walk_function_body

# Calls followed from a class's own methods into the methods they run (a bound on odd code).
MAX_METHODS = 64


def self_attribute_prefix(expr: ast.AST) -> str | None:
    """The constant prefix of the attribute name ``getattr(self, <name built at run time>)`` reads."""
    if not (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id == "getattr"
        and len(expr.args) >= 2
        and isinstance(expr.args[0], ast.Name)
        and expr.args[0].id == "self"
    ):
        return None
    return run_time_prefix(expr.args[1])


def run_time_prefix(expr: ast.AST) -> str | None:
    """The constant start of a string built at run time: ``"net_" + name`` -> ``"net_"``,
    ``f"net{name}"`` / ``"net%s" % name`` / ``"net{}".format(name)`` -> ``"net"``, a name or any
    other computed value -> ``""``; None for a string constant (it names one attribute)."""
    if isinstance(expr, ast.Constant):
        return None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        head = run_time_prefix(expr.left)
        if head is None and isinstance(expr.left, ast.Constant) and isinstance(expr.left.value, str):
            return expr.left.value if not isinstance(expr.right, ast.Constant) else None
        return head if head is not None else ""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mod) and _is_text(expr.left):
        return expr.left.value.split("%", 1)[0]  # type: ignore[union-attr]
    if isinstance(expr, ast.JoinedStr):
        head = expr.values[0] if expr.values else None
        return head.value if isinstance(head, ast.Constant) and isinstance(head.value, str) else ""
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "format"
        and _is_text(expr.func.value)
    ):
        return expr.func.value.value.split("{", 1)[0]  # type: ignore[union-attr]
    return ""


def _is_text(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Constant) and isinstance(expr.value, str)


def methods_run_by(cls: Definition) -> list[Definition]:
    """The methods ``cls``'s own code runs (see the module docstring), its own first."""
    found: dict = {}
    pending = [cls.member(node) for node in cls.node.body if isinstance(node, FUNCTION_NODES)]  # type: ignore[union-attr]
    while pending and len(found) < MAX_METHODS:
        method = pending.pop(0)
        if method.key in found:
            continue
        found[method.key] = method
        for node in walk_function_body(method.node):
            if isinstance(node, ast.Call):
                callee = _method_called(cls, method, node)
                if callee is not None and callee.key not in found:
                    pending.append(callee)
    return list(found.values())


def _method_called(cls: Definition, method: Definition, call: ast.Call) -> Definition | None:
    """The method a call runs on the same object: ``self.m(...)`` (looked up from ``cls``),
    ``super().m(...)``, ``Base.m(self, ...)``."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    if isinstance(func.value, ast.Name) and func.value.id == "self":
        return find_method(cls, func.attr)
    on_self = isinstance(func.value, ast.Call) or (
        call.args and isinstance(call.args[0], ast.Name) and call.args[0].id == "self"
    )
    callee = resolve_call(method.ctx, call) if on_self else None
    if callee is None or not isinstance(callee.ctx.parent(callee.node), ast.ClassDef):
        return None
    return callee
