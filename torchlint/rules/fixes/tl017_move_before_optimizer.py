"""TL017's fix: move the model to its device before the optimizer is built from its parameters."""

from __future__ import annotations

from torchlint.engine.finding import SAFE, Fix
from torchlint.engine.fixers import RuleFix, block_of, in_block, index_in, names_bound, names_read, register_fix


@register_fix
class MoveBeforeOptimizer(RuleFix):
    codes = ("TL017",)
    applicabilities = (SAFE,)
    summary = """
        Moves the statement that moves the model (`model = model.to(device)`, or the `if` holding it)
        to just before the statement that builds the optimizer.
    """
    safety = """
        `Module.to()` works in place and returns the module, so everything between the two statements
        sees the same model, and the optimizer now holds parameters already on their device. Not
        offered when the moving statement reads a name assigned in between (a device set after the
        optimizer), or when the two are in different blocks.
    """
    EXAMPLES = [
        (
            """
import torch
def setup(device, checkpoint):
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    optimizer.load_state_dict(checkpoint["optimizer"])
    model = model.to(device)  # expect: TL017
    return model, optimizer
""",
            """
import torch
def setup(device, checkpoint):
    model = torch.nn.Linear(4, 2)
    model = model.to(device)  # expect: TL017
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    optimizer.load_state_dict(checkpoint["optimizer"])
    return model, optimizer
""",
        ),
    ]

    def plan(self, ctx, diagnostic):
        build = diagnostic.evidence
        assign = getattr(build, "assign", None)
        if assign is None:
            return None
        block = block_of(ctx, assign)
        moving = in_block(ctx, diagnostic.node, block) if block is not None else None
        if moving is None:
            return None
        start, end = index_in(block, assign), index_in(block, moving)
        if end <= start or names_read(moving) & names_bound(block[start:end]):
            return None
        return Fix(
            "Move the model before building the optimizer",
            applicability=SAFE,
            build=lambda edit: edit.move_before(moving, assign),
        )
