"""TL015's fix: move `scheduler.step()` after the optimizer step of the same iteration."""

from __future__ import annotations

from torchlint.engine.finding import SAFE, Fix
from torchlint.engine.fixers import (
    RuleFix,
    block_of,
    in_block,
    index_in,
    is_plain_call_statement,
    jumps,
    register_fix,
    statement_of,
)


@register_fix
class SchedulerAfterStep(RuleFix):
    codes = ("TL015",)
    applicabilities = (SAFE,)
    summary = """
        Moves the `scheduler.step()` statement to just after the statement of its block that runs
        the optimizer step (the step itself, or the inner loop over the batches that holds it).
    """
    safety = """
        the scheduler still steps once per iteration, now after the update it governs, as PyTorch
        requires. Not offered when the step lies in another block, or when something between the
        two (a `continue`, `break`, `return` or `raise`) could skip the moved call.
    """
    EXAMPLES = [
        (
            """
import torch
def train(model, loader, epochs):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, 30)
    for epoch in range(epochs):
        sched.step()  # expect: TL015
        for x, y in loader:
            opt.zero_grad()
            model(x).sub(y).pow(2).mean().backward()
            opt.step()
        print(epoch)
""",
            """
import torch
def train(model, loader, epochs):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, 30)
    for epoch in range(epochs):
        for x, y in loader:
            opt.zero_grad()
            model(x).sub(y).pow(2).mean().backward()
            opt.step()
        sched.step()  # expect: TL015
        print(epoch)
""",
        ),
    ]

    def plan(self, ctx, diagnostic):
        evidence = diagnostic.evidence
        if not isinstance(evidence, tuple):
            return None
        sched, step = evidence
        stmt = statement_of(ctx, sched.node)
        if sched.via or not is_plain_call_statement(stmt, sched.node):
            return None
        block = block_of(ctx, stmt)
        anchor = in_block(ctx, step.site, block) if block is not None else None
        if anchor is None:
            return None
        start, end = index_in(block, stmt), index_in(block, anchor)
        if end <= start or jumps(block[start + 1 : end]):
            return None
        return Fix(
            "Step the scheduler after the optimizer",
            applicability=SAFE,
            build=lambda edit: edit.move_after(stmt, anchor),
        )
