"""Asserts that check the input, not what the code computes.

A unit test asserts on what it computes: a model's output, a parameter it receives, a value it
builds (``out = model(torch.randn(2, 3)); assert out.shape == (2, 4)``). A script's evaluation may
assert too, but only on the data it iterates and the configuration it reads (``for x, y in
test_loader: assert x.size(2) >= args.timesteps``): a sanity check on the input, which makes it no
test. An assert checks only the input when every value it reads is

* a global of the program (configuration, a loader, a constant), not called;
* a target of a loop over such values (``for i, (x, y) in enumerate(test_loader)``);
* such a value moved, cast or wrapped (``x.cuda()``, ``Variable(x, volatile=True)``), or a method
  of it (``x.size(2)``, ``x.dim()``), or combined with builtins (``len(x)``) and operators.

Anything else -- a call of a model or a function, a parameter, a value the function computes -- is
a result, and the assert checks it.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.outcomes import assertions
from torchlint.torchmodel import vocabulary as torch_names

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

_INPUT_BINDINGS = frozenset({"for", "assign", "unpack"})


def asserts_on_results(ctx: FileContext, func: ast.AST) -> bool:
    """Whether an assertion of ``func`` (or of a function nested in it) reads a result, not only
    the input (see the module)."""
    return any(not _reads_only_input(ctx, func, checked, set()) for checked in assertions(func))


def _reads_only_input(ctx: FileContext, func: ast.AST, expr: ast.AST, seen: set) -> bool:
    flow = dataflow(ctx)
    called = set()
    for node in ast.walk(expr):
        if isinstance(node, ast.Call):
            called.add(node.func)
            if not _input_call(ctx, func, node):
                return False
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node not in called:
            for binding in flow.reaching(node):
                if binding in seen or not ctx.is_inside(binding.stmt, func):
                    continue  # a global of the program, or a loop-carried value already judged
                seen.add(binding)
                source = binding.source if binding.kind == "for" else binding.value
                if binding.kind not in _INPUT_BINDINGS or source is None:
                    return False  # a parameter, a `with` target...: what the function receives
                if not _reads_only_input(ctx, func, source, seen):
                    return False
    return True


def _input_call(ctx: FileContext, func: ast.AST, call: ast.Call) -> bool:
    """A builtin (``len``, ``enumerate``), the legacy ``Variable`` wrapper, or a method of a value
    of the function (``x.size(2)``, ``x.cuda()``): its operands are judged on their own."""
    callee = call.func
    if isinstance(callee, ast.Name):
        return not dataflow(ctx).reaching(callee) or ctx.qualname(callee) in torch_names.VARIABLE_WRAPPERS
    root = callee
    while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
        root = root.func if isinstance(root, ast.Call) else root.value
    if not isinstance(root, ast.Name):
        return False
    return any(ctx.is_inside(binding.stmt, func) for binding in dataflow(ctx).reaching(root))
