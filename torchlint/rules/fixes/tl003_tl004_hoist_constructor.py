"""TL003's and TL004's fix: build the model (optimizer) once, before the loop."""

from __future__ import annotations

import ast

from torchlint.engine.finding import UNSAFE, Fix
from torchlint.engine.fixers import RuleFix, names_bound, names_read, register_fix, statement_of

_LOOPS = (ast.For, ast.AsyncFor, ast.While)


@register_fix
class HoistConstructor(RuleFix):
    codes = ("TL003", "TL004")
    applicabilities = (UNSAFE,)
    summary = """
        Moves the statement that builds the model (optimizer) to just before the loop, when nothing
        it reads is assigned inside the loop (so it would build the same thing every time).
    """
    safety = """
        that the loop continues one training run rather than starting a new one each
        iteration is read from names and from what the loop does, and the fix changes what every
        iteration after the first trains.
    """
    EXAMPLES = [
        (
            """
import torch
def train(model, loader, epochs):
    for epoch in range(epochs):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)  # expect: TL004
        for x, y in loader:
            optimizer.zero_grad()
            model(x).sub(y).pow(2).mean().backward()
            optimizer.step()
""",
            """
import torch
def train(model, loader, epochs):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)  # expect: TL004
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            model(x).sub(y).pow(2).mean().backward()
            optimizer.step()
""",
        ),
    ]

    def plan(self, ctx, diagnostic):
        found = diagnostic.evidence
        loop = getattr(found, "loop", None)
        if loop is None or found.via:
            return None
        stmt = statement_of(ctx, diagnostic.node)
        if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or not _only_loops_between(ctx, stmt, loop):
            return None
        inside = names_bound([loop])
        targets = names_bound([stmt])
        others = names_bound([s for s in ast.walk(loop) if isinstance(s, ast.stmt) and s is not stmt and s is not loop])
        if names_read(stmt) & inside or targets & (others | _loop_targets(loop)):
            return None
        return Fix(
            "Build it once, before the loop",
            applicability=UNSAFE,
            build=lambda edit: edit.move_before(stmt, loop),
        )


def _only_loops_between(ctx, stmt: ast.stmt, loop: ast.AST) -> bool:
    """``stmt`` sits in ``loop``'s body, or in the bodies of loops inside it (no branch, no with)."""
    parent = ctx.parent(stmt)
    while parent is not loop:
        if not isinstance(parent, _LOOPS) or any(s is stmt for s in parent.orelse):
            return False
        stmt, parent = parent, ctx.parent(parent)
    return any(s is stmt for s in loop.body)


def _loop_targets(loop: ast.AST) -> set[str]:
    target = getattr(loop, "target", None)
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)} if target is not None else set()
