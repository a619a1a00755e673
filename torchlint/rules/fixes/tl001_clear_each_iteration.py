"""TL001's fix: clear the optimizer's gradients once per iteration."""

from __future__ import annotations

from torchlint.engine.finding import SAFE, UNSAFE, Fix
from torchlint.engine.fixers import RuleFix, block_of, in_block, register_fix, root_name, statement_of, visible_at_start
from torchlint.torchmodel.accumulation import gradient_accumulation
from torchlint.torchmodel.clearing import clearing


@register_fix
class ClearEachIteration(RuleFix):
    codes = ("TL001",)
    applicabilities = (SAFE, UNSAFE)
    summary = """
        Inserts `optimizer.zero_grad()` (for the optimizer that steps) as the first statement of
        the iteration: the loop body, or the per-iteration step function. In a loop that accumulates
        gradients over several iterations (the step runs under `if (i + 1) % n == 0:`), inserts it
        right after the step instead.
    """
    safety = """
        safe at the start of an iteration that runs its own backward before the step: each step then
        applies that iteration's gradients, and a clear the linter did not see (a helper of another
        file) is only repeated. Unsafe after the step of an accumulating loop, where the linter infers
        which iterations form one update.
    """
    EXAMPLES = [
        (
            """
import torch
def train(model, loader, criterion):
    optimizer = torch.optim.Adam(model.parameters())
    optimizer.zero_grad()
    for x, y in loader:
        # forward
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()  # expect: TL001
""",
            """
import torch
def train(model, loader, criterion):
    optimizer = torch.optim.Adam(model.parameters())
    optimizer.zero_grad()
    for x, y in loader:
        optimizer.zero_grad()
        # forward
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()  # expect: TL001
""",
        ),
        (
            """
import torch
def train(model, loader, optimizer, accum_steps):
    for i, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()  # expect: TL001
""",
            """
import torch
def train(model, loader, optimizer, accum_steps):
    for i, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        loss.backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()  # expect: TL001
            optimizer.zero_grad()
""",
        ),
    ]

    def plan(self, ctx, diagnostic):
        evidence = diagnostic.evidence
        if not isinstance(evidence, tuple):
            return None
        unit, step = evidence
        optimizer = clearing(ctx).canonical_target(step)
        root = root_name(optimizer)
        if root is None or not visible_at_start(ctx, root, unit.owner):
            return None
        clear = f"{optimizer}.zero_grad()"
        index = next(i for i, e in enumerate(unit.events) if e is step)
        test, _ = gradient_accumulation(ctx).accumulation_gate(unit.events, index)
        if test is None:
            return Fix(
                f"Call `{clear}` each iteration", applicability=SAFE, build=lambda e: e.insert_first(unit.owner, clear)
            )
        stmt = statement_of(ctx, step.site)
        block = block_of(ctx, stmt) if stmt is not None else None
        if block is None or in_block(ctx, test, block) is not None or not ctx.is_inside(stmt, unit.owner):
            return None  # the step is not inside its accumulation test's block
        return Fix(f"Call `{clear}` after the step", applicability=UNSAFE, build=lambda e: e.insert_after(stmt, clear))
