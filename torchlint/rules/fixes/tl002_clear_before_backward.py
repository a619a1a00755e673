"""TL002's fix: move the clear before the backward pass of the same iteration."""

from __future__ import annotations

from torchlint.engine.finding import SAFE, Fix
from torchlint.engine.fixers import (
    RuleFix,
    block_of,
    in_block,
    index_in,
    is_plain_call_statement,
    register_fix,
    statement_of,
)
from torchlint.torchmodel.events import BACKWARD_KINDS, EventKind, exclusive


@register_fix
class ClearBeforeBackward(RuleFix):
    codes = ("TL002",)
    applicabilities = (SAFE,)
    summary = """
        Moves the clearing statement to just before the statement of its block that runs the
        iteration's first backward pass (after the previous step of the same optimizer, if any).
    """
    safety = """
        gradients are then cleared before they are computed rather than before they are applied,
        which is the order the step needs; the forward pass is unaffected, since it does not read
        `.grad`. Not offered when the clear is inside a helper or the backward lies in another block.
    """
    EXAMPLES = [
        (
            """
import torch
def train(model, loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = model(x).sub(y).pow(2).mean()
        loss.backward()
        optimizer.zero_grad()  # expect: TL002
        optimizer.step()
""",
            """
import torch
def train(model, loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = model(x).sub(y).pow(2).mean()
        optimizer.zero_grad()  # expect: TL002
        loss.backward()
        optimizer.step()
""",
        ),
    ]

    def plan(self, ctx, diagnostic):
        evidence = diagnostic.evidence
        if not isinstance(evidence, tuple) or len(evidence) != 4:
            return None
        clear, backward, step, events = evidence
        stmt = statement_of(ctx, clear.node)
        if clear.via or not is_plain_call_statement(stmt, clear.node):
            return None
        first = _first_backward(events, clear, step)
        block = block_of(ctx, stmt)
        anchor = in_block(ctx, first.site, block) if block is not None and first is not None else None
        if anchor is None or index_in(block, anchor) >= index_in(block, stmt):
            return None
        return Fix(
            "Clear the gradients before the backward pass",
            applicability=SAFE,
            build=lambda edit: edit.move_before(stmt, anchor),
        )


def _first_backward(events, clear, step):
    """The first backward of the iteration whose gradients the step applies: after the previous
    step of the same optimizer, before the clear."""
    index = next(i for i, e in enumerate(events) if e is clear)
    first = None
    for event in reversed(events[:index]):
        if exclusive(event, clear):
            continue
        if event.kind is EventKind.STEP and event.target == step.target:
            break
        if event.kind in BACKWARD_KINDS:
            first = event
    return first
