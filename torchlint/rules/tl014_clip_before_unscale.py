"""TL014 clip-before-unscale."""

from __future__ import annotations

import ast

from torchlint.analysis.callgraph import in_caller_terms, resolve_local_call
from torchlint.analysis.imports import dotted_name
from torchlint.engine.rule import Message, Rule, register
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.amp import backward_scaler, scaled_backward
from torchlint.torchmodel.calls import call_events
from torchlint.torchmodel.events import EventKind, exclusive, guard_key
from torchlint.torchmodel.roles import Role, object_roles
from torchlint.torchmodel.walk import event_walker

# Clipping helpers that unscale by themselves before clipping (accelerate, Lightning
# Fabric, Lightning's LightningModule.clip_gradients): never findings.
_SELF_UNSCALING_OWNERS = ("accelerator", "fabric", "self", "trainer", "strategy", "precision")


@register
class ClipBeforeUnscale(Rule):
    code = "TL014"
    name = "clip-before-unscale"
    severity = "error"
    summary = "Gradients are clipped while still multiplied by the GradScaler's scale factor."
    what = """
        Reports `torch.nn.utils.clip_grad_norm_` / `clip_grad_value_` (or an FSDP model's
        `clip_grad_norm_`) that runs after `scaler.scale(loss).backward()` and before
        `scaler.step(optimizer)` with no `scaler.unscale_(optimizer)` in between. The
        order is followed through `if` branches, inner loops (gradient accumulation) and
        helper functions and methods of the same file; a helper's conditions are read in
        its caller's terms, so a clip on the `scaler is None` branch after a helper that
        scales only `if scaler is not None:` is not reported.
    """
    why = """
        `scaler.scale(loss)` multiplies the loss, hence every gradient, by the current
        scale factor (65536 at the start). Clipping those gradients compares the
        threshold with a norm that is thousands of times too large: the clip either
        fires on every step and shrinks the true update to almost nothing, or, as the
        scale changes, clips by an amount unrelated to `max_norm`. The run trains, only
        worse, so nothing points at the cause.
    """
    example = """
        import torch

        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        scaler.step(optimizer)
        scaler.update()
    """
    instead = """
        import torch

        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)  # gradients back to their true size
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        scaler.step(optimizer)  # knows the gradients are unscaled already
        scaler.update()
    """
    VALID = [
        """
import torch
scaler = torch.amp.GradScaler("cuda")
def train(model, opt, loader):
    for x, y in loader:
        loss = model(x, y)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
""",
        """
import torch
def train(model, opt, loader, scaler, use_amp):
    for x, y in loader:
        loss = model(x, y)
        if use_amp:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
""",
        """
def train(accelerator, model, opt, loader):
    for x, y in loader:
        accelerator.backward(model(x, y))
        accelerator.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
""",
    ]
    INVALID = [
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
from torch.nn.utils import clip_grad_value_
class Trainer:
    def __init__(self):
        self.scaler = torch.amp.GradScaler("cuda")
    def scaled_backward(self, loss):
        self.scaler.scale(loss).backward()
    def fit(self, loader):
        for i, batch in enumerate(loader):
            self.scaled_backward(self.model(batch))
            if (i + 1) % 4 == 0:
                clip_grad_value_(self.model.parameters(), 0.5)  # expect: TL014
                self.scaler.step(self.opt)
                self.scaler.update()
""",
    ]

    def check(self, ctx):
        names = _CLIP_NAMES | {
            alias for alias, qual in ctx.imports.aliases.items() if qual in torch_names.CLIP_FUNCTIONS
        }
        clips = [c for c in ctx.calls if _clip_like_name(c, names) and _is_checked_clip(ctx, c)]
        if not clips or not any(_is_scale_call(c) for c in ctx.calls):
            return
        reported: set[ast.AST] = set()
        for scope in _scopes_reaching(ctx, clips):
            events = event_walker(ctx).events(scope.body)
            for index, event in enumerate(events):
                if event.kind is not EventKind.CLIP or event.node in reported or not _is_checked_clip(ctx, event.node):
                    continue
                backward = _unscaled_scaled_backward(ctx, events, index)
                if backward is not None and not _helper_unscales(ctx, event.node):
                    reported.add(event.node)
                    stepped = _stepped_optimizer(events[index + 1 :])
                    message = self._message(ctx, event.node, backward, stepped or "optimizer")
                    yield self.report(event.node, message, evidence=(event, backward, stepped, events[index + 1 :]))

    @staticmethod
    def _message(ctx, clip, backward, optimizer) -> Message:
        scaler = dotted_name(backward_scaler(ctx, backward)) or "scaler"
        return Message(
            f"`{ctx.quote(clip.func)}` clips gradients that are still scaled by `{scaler}` "
            f"(scaled backward on line {backward.node.lineno})",
            why="the threshold is compared with a norm multiplied by the loss scale",
            help=f"call `{scaler}.unscale_({optimizer})` right before clipping",
        )


def _stepped_optimizer(later_events) -> str | None:
    """The optimizer the next ``scaler.step(opt)`` steps, to name it in the message."""
    for event in later_events:
        if event.kind is EventKind.STEP and event.target and isinstance(event.node, ast.Call) and event.node.args:
            return event.target
    return None


_CLIP_NAMES = frozenset({"clip_grad_norm_", "clip_grad_value_", "clip_grad_norm"})


def _clip_like_name(call: ast.Call, names) -> bool:
    """Cheap name filter (clip names and their import aliases) before asking the training model."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return name in names


def _is_scale_call(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Attribute) and call.func.attr == "scale"


def _is_checked_clip(ctx, call: ast.AST) -> bool:
    """torch's clip functions, or ``model.clip_grad_norm_`` (FSDP); not self-unscaling helpers."""
    if not isinstance(call, ast.Call):
        return False
    event = call_events(ctx).classify(call)
    if event is None or event.kind is not EventKind.CLIP:
        return False
    if ctx.call_qualname(call) in torch_names.CLIP_FUNCTIONS:
        return True
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in ("clip_grad_norm_", "clip_grad_value_"):
        return False  # e.g. Lightning's clip_gradients, which unscales first
    owner = dotted_name(func.value) or ""
    if owner.rsplit(".", 1)[-1].lower().startswith(_SELF_UNSCALING_OWNERS):
        return False
    return object_roles(ctx).role_of(func.value) == Role.MODEL


# Events that end the search back from a clip: the gradients were unscaled or applied.
_BEFORE_CLIP_ENDS = frozenset({EventKind.UNSCALE, EventKind.STEP, EventKind.OPAQUE_STEP})


def _unscaled_scaled_backward(ctx, events, clip_index):
    """The latest scaled backward that can precede the clip with no unscale or step in between."""
    clip = events[clip_index]
    for event in reversed(events[:clip_index]):
        if exclusive(event, clip) or _exclusive_through_calls(ctx, event, clip):
            continue
        if event.kind in _BEFORE_CLIP_ENDS:
            return None
        if event.kind is EventKind.BACKWARD:
            if scaled_backward(ctx, event):
                return event
            if not event.guards or not _can_be_scaled_elsewhere(ctx, events, event, clip):
                return None
    return None


def _exclusive_through_calls(ctx, a, b) -> bool:
    """Two events on opposite sides of the same condition once the conditions inside called helpers
    are written in the caller's terms (``backward(loss, scaler)`` scales ``if scaler is not None``;
    the clip sits under the caller's ``if scaler is not None: ... else:``).

    Both are written in the terms of the deepest function they are both walked through (the calls
    their ``via`` chains share): above it their conditions are the same, and a condition that cannot
    be carried further out (``args`` is a local of ``main()``) still compares there."""
    shared = _shared_call_depth(a.via, b.via)
    keys_a, keys_b = _caller_guard_keys(ctx, a, shared), _caller_guard_keys(ctx, b, shared)
    return any((text, not branch) in keys_b for text, branch in keys_a)


def _shared_call_depth(via_a, via_b) -> int:
    """How many calls, from the walked block inwards, two events are reached through in common."""
    depth = 0
    for call_a, call_b in zip(via_a, via_b):
        if call_a is not call_b:
            break
        depth += 1
    return depth


def _caller_guard_keys(ctx, event, shared: int = 0) -> set:
    """The event's conditions as ``guard_key``s in the terms of the function its first ``shared``
    calls lead into (the block the event was walked from when ``shared`` is 0)."""
    keys = set()
    for test, branch in event.guards:
        if not isinstance(test, ast.expr):
            continue
        home = ctx.enclosing_function(test)
        for call in reversed(event.via[shared:]):
            callee = resolve_local_call(ctx, call)
            if callee is not home:
                continue
            test = in_caller_terms(ctx, test, call, callee)
            if test is None:
                break
            home = ctx.enclosing_function(call)
        else:
            keys.add(guard_key(ctx, (test, branch)))
    return keys


def _can_be_scaled_elsewhere(ctx, events, plain_backward, clip) -> bool:
    """A plain backward in one branch (``else: loss.backward()``) does not hide a scaled
    one in the other branch that the clip also follows."""
    return any(scaled_backward(ctx, e) and exclusive(e, plain_backward) and not exclusive(e, clip) for e in events)


def _helper_unscales(ctx, clip: ast.Call) -> bool:
    """A call to a helper whose name says it unscales (defined elsewhere) before the clip
    in the same function counts as unscaling."""
    scope = ctx.enclosing_function(clip)
    for call in ctx.calls:
        if call.lineno > clip.lineno:
            break
        name = (dotted_name(call.func) or "").rsplit(".", 1)[-1]
        if name == "unscale_" or resolve_local_call(ctx, call) is not None:
            continue  # real unscale_ calls and local helpers are seen by the event model
        if "unscale" in name and ctx.enclosing_function(call) is scope:
            return True
    return False


def _scopes_reaching(ctx, clips):
    """Function bodies (and the module) whose events can contain one of the clips:
    the function that holds each clip, and every function of the file that calls it."""
    callers: dict = {}
    for call in ctx.calls:
        callee = resolve_local_call(ctx, call)
        if callee is not None:
            callers.setdefault(callee, []).append(ctx.enclosing_function(call))
    seen = set()
    frontier = [ctx.enclosing_function(c) for c in clips]
    while frontier:
        func = frontier.pop()
        if func in seen:
            continue
        seen.add(func)
        if func is not None:
            frontier.extend(callers.get(func, ()))
    for func in sorted((f for f in seen if f is not None), key=lambda f: f.lineno):
        yield func
    if None in seen:
        yield ctx.tree
