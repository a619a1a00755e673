"""TL013's fix: a plain container of modules -> `nn.ModuleList`/`nn.ModuleDict` (or the Parameter
ones); a tensor made trainable with `requires_grad=True` -> `nn.Parameter`."""

from __future__ import annotations

import ast

from torchlint.analysis.nodes import method_call
from torchlint.engine.finding import SAFE, UNSAFE, Fix
from torchlint.engine.fixers import RuleFix, register_fix

PARAMETER = "torch.nn.Parameter"


@register_fix
class RegisterContainer(RuleFix):
    codes = ("TL013",)
    applicabilities = (SAFE, UNSAFE)
    summary = """
        Wraps the container in the registering one the message names (`nn.ModuleList(...)`,
        `nn.ModuleDict(...)`, `nn.ParameterList(...)`, `nn.ParameterDict(...)`; an empty one becomes
        `nn.ModuleList()`), or the trainable tensor in `nn.Parameter(...)` (dropping `requires_grad=True`,
        which a Parameter has anyway). Imports are spelled as the file already spells `torch.nn`.
    """
    safety = """
        safe for a list or tuple of freshly built layers, or a dict of them under string keys: the
        layers become part of the model, which is what a list of layers in `__init__` means, and a
        `ModuleList` indexes, iterates and appends like the list. Unsafe for a container whose
        elements or keys the linter cannot see (a registering dict rejects keys that are not strings),
        and for a tensor made trainable: as a Parameter it joins `model.parameters()`, so an optimizer
        built from them now also trains it, which may not be how the author meant to train it.
    """
    EXAMPLES = [
        (
            """
import torch
import torch.nn as nn
class Net(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.blocks = [nn.Linear(8, 8) for _ in range(n)]  # expect: TL013
        self.temperature = torch.ones(1, requires_grad=True).to("cpu")  # expect: TL013
""",
            """
import torch
import torch.nn as nn
class Net(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(n)])  # expect: TL013
        self.temperature = nn.Parameter(torch.ones(1).to("cpu"))  # expect: TL013
""",
        ),
        (
            """
import torch
from torch.nn import Module, Linear
class Block(Module):
    def __init__(self):
        super().__init__()
        self.proj = Linear(4, 4)
class Net(Module):
    def __init__(self, depth):
        super().__init__()
        self.stages = []  # expect: TL013
        for i in range(depth):
            self.stages.append(Block())
        self.heads = {"a": Linear(4, 2), "b": Linear(4, 3)}  # expect: TL013
""",
            """
import torch
from torch.nn import Module, Linear
class Block(Module):
    def __init__(self):
        super().__init__()
        self.proj = Linear(4, 4)
class Net(Module):
    def __init__(self, depth):
        super().__init__()
        self.stages = torch.nn.ModuleList()  # expect: TL013
        for i in range(depth):
            self.stages.append(Block())
        self.heads = torch.nn.ModuleDict({"a": Linear(4, 2), "b": Linear(4, 3)})  # expect: TL013
""",
        ),
    ]

    def plan(self, ctx, diagnostic):
        replacement = diagnostic.evidence
        node = diagnostic.node
        value = getattr(node, "value", None)
        if not isinstance(replacement, str) or value is None:
            return None
        short = replacement.rsplit(".", 1)[-1]
        if replacement == PARAMETER:
            return _parameter(ctx, value)
        if _empty(value):

            def build(edit):
                edit.replace(value, f"{edit.spell(replacement)}()")

            applicability = SAFE if short.endswith("List") else UNSAFE
            return Fix(f"Use an empty `{short}`", applicability=applicability, build=build)

        def build(edit):
            edit.wrap_call(value, edit.spell(replacement))

        applicability = SAFE if _visible_modules(value) else UNSAFE
        return Fix(f"Wrap in `{short}(...)`", applicability=applicability, build=build)


def _parameter(ctx, value: ast.AST):
    found = method_call(value)
    if found is not None and found[0] == "requires_grad_" and not value.args:
        receiver = found[1]

        def build(edit):
            edit.replace(value, f"{edit.spell(PARAMETER)}({ast.get_source_segment(ctx.source, receiver)})")

        return Fix("Make it an `nn.Parameter`", applicability=UNSAFE, build=build)

    def build(edit):
        edit.wrap_call(value, edit.spell(PARAMETER), dropping="requires_grad")

    return Fix("Make it an `nn.Parameter`", applicability=UNSAFE, build=build)


def _empty(value: ast.AST) -> bool:
    if isinstance(value, (ast.List, ast.Tuple)):
        return not value.elts
    if isinstance(value, ast.Dict):
        return not value.keys
    return isinstance(value, ast.Call) and not value.args and not value.keywords


def _visible_modules(value: ast.AST) -> bool:
    """Every element is built right there (a call), and a dict's keys are strings written out."""
    if isinstance(value, ast.BinOp):  # [nn.Linear(8, 8)] * n
        value = value.left if isinstance(value.left, (ast.List, ast.Tuple)) else value.right
    if isinstance(value, ast.Call) and len(value.args) == 1:  # list(...), tuple(...)
        value = value.args[0]
    if isinstance(value, (ast.List, ast.Tuple)):
        return all(_built(e) for e in value.elts)
    if isinstance(value, (ast.ListComp, ast.GeneratorExp)):
        return _built(value.elt)
    if isinstance(value, ast.Dict):
        keys_ok = all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in value.keys)
        return keys_ok and all(_built(v) for v in value.values)
    return False


def _built(expr: ast.AST) -> bool:
    if isinstance(expr, ast.IfExp):
        return _built(expr.body) and _built(expr.orelse)
    return isinstance(expr, ast.Call)
