"""TL011's fix: pass `training=self.training` to the functional dropout."""

from __future__ import annotations

import ast

from torchlint.engine.finding import SAFE, Fix
from torchlint.engine.fixers import RuleFix, register_fix
from torchlint.torchmodel import vocabulary as torch_names


@register_fix
class PassTrainingFlag(RuleFix):
    codes = ("TL011",)
    applicabilities = (SAFE,)
    summary = "Passes `training=self.training` (the flag `model.train()`/`model.eval()` sets) to the call."
    safety = """
        in training mode nothing changes; in eval mode dropout stops, which is what an
        `nn.Dropout` submodule does and what `model.eval()` promises.
    """
    EXAMPLES = [
        (
            """
import torch.nn as nn
import torch.nn.functional as F
class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)
    def forward(self, x):
        x = F.dropout(x, p=0.5)  # expect: TL011
        return self.fc(x)
""",
            """
import torch.nn as nn
import torch.nn.functional as F
class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)
    def forward(self, x):
        x = F.dropout(x, p=0.5, training=self.training)  # expect: TL011
        return self.fc(x)
""",
        ),
        (
            """
import torch.nn as nn
from torch.nn import functional
class Block(nn.Module):
    def forward(me, x):
        return functional.dropout(  # expect: TL011
            x,
            0.1,
        )
""",
            """
import torch.nn as nn
from torch.nn import functional
class Block(nn.Module):
    def forward(me, x):
        return functional.dropout(  # expect: TL011
            x,
            0.1,
            training=me.training,
        )
""",
        ),
    ]

    def plan(self, ctx, diagnostic):
        call = diagnostic.node
        spec = torch_names.DROPOUT_FUNCTIONS.get(ctx.call_qualname(call))
        method = _method_of(ctx, call)
        if spec is None or method is None or not method.args.args:
            return None
        parameter = spec[1]
        receiver = method.args.args[0].arg
        flag = f"{receiver}.training"
        return Fix(
            f"Pass `{parameter}={flag}`", applicability=SAFE, build=lambda edit: edit.add_keyword(call, parameter, flag)
        )


def _method_of(ctx, call: ast.Call) -> ast.FunctionDef | None:
    """The method of the module class that holds the call (through nested functions)."""
    method = None
    for ancestor in ctx.ancestors(call):
        if isinstance(ancestor, ast.ClassDef):
            return method
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
            method = ancestor
    return None
