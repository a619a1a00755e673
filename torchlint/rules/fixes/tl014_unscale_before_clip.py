"""TL014's fix: `scaler.unscale_(optimizer)` right before the clip."""

from __future__ import annotations

from torchlint.analysis.imports import dotted_name
from torchlint.engine.finding import SAFE, UNSAFE, Fix
from torchlint.engine.fixers import RuleFix, register_fix, root_name, statement_of, visible_at_start
from torchlint.torchmodel.amp import backward_scaler
from torchlint.torchmodel.events import EventKind


@register_fix
class UnscaleBeforeClip(RuleFix):
    codes = ("TL014",)
    applicabilities = (SAFE, UNSAFE)
    summary = "Inserts `scaler.unscale_(optimizer)` just before the statement that clips, for the optimizer the scaler steps next."
    safety = """
        safe when one optimizer steps after the clip: `scaler.step()` sees that it was unscaled and
        does not unscale again, and the clip compares its threshold with the true norm. Unsafe when
        several optimizers step (the one whose gradients are clipped is inferred). Not offered when an
        `unscale_` already follows the clip (a second one raises) or the scaler is not in reach.
    """
    EXAMPLES = [
        (
            """
import torch
from torch.cuda.amp import GradScaler
scaler = GradScaler()
def train(model, opt, loader):
    for x, y in loader:
        loss = model(x, y)
        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: TL014
        scaler.step(opt)
        scaler.update()
""",
            """
import torch
from torch.cuda.amp import GradScaler
scaler = GradScaler()
def train(model, opt, loader):
    for x, y in loader:
        loss = model(x, y)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: TL014
        scaler.step(opt)
        scaler.update()
""",
        ),
    ]

    def plan(self, ctx, diagnostic):
        evidence = diagnostic.evidence
        if not isinstance(evidence, tuple):
            return None
        clip, backward, optimizer, later = evidence
        scaler = dotted_name(backward_scaler(ctx, backward))
        stmt = statement_of(ctx, clip.node)
        if optimizer is None or scaler is None or clip.via or backward.via or stmt is None:
            return None
        if any(e.kind is EventKind.UNSCALE for e in later):
            return None
        where = ctx.enclosing_function(stmt) or ctx.tree
        for name in (root_name(scaler), root_name(optimizer)):
            if name is None or not (
                where is ctx.tree or visible_at_start(ctx, name, where) or _bound_before(where, name, stmt)
            ):
                return None
        stepped = {e.target for e in later if e.kind is EventKind.STEP}
        code = f"{scaler}.unscale_({optimizer})"
        return Fix(
            f"Call `{code}` before clipping",
            applicability=SAFE if len(stepped) == 1 else UNSAFE,
            build=lambda edit: edit.insert_before(stmt, code),
        )


def _bound_before(func, name: str, stmt) -> bool:
    import ast

    return any(
        isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store) and node.lineno < stmt.lineno
        for node in ast.walk(func)
    )
