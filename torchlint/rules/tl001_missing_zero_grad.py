"""TL001 missing-zero-grad."""

from __future__ import annotations

import ast

from torchlint.analysis.call_values import call_scenarios, decided_in
from torchlint.analysis.conditions import consequences, never_runs
from torchlint.analysis.dataflow import dataflow
from torchlint.engine.rule import Message, Rule, register
from torchlint.torchmodel.accumulation import gradient_accumulation
from torchlint.torchmodel.calls import call_events
from torchlint.torchmodel.clearing import clearing
from torchlint.torchmodel.events import BACKWARD_KINDS, CLEAR_KINDS, forced_keys, guard_implied, guard_key
from torchlint.torchmodel.fresh_runs import steps_fresh_model_once, steps_fresh_optimizer
from torchlint.torchmodel.iterations import iterations
from torchlint.torchmodel.phases import kept_by_every_call
from torchlint.torchmodel.roles import Role, object_roles
from torchlint.torchmodel.unobserved_runs import trains_unobserved


@register
class MissingZeroGrad(Rule):
    code = "TL001"
    name = "missing-zero-grad"
    severity = "error"
    summary = "An optimizer steps every iteration but its gradients are never cleared between steps."
    what = """
        Reports an optimizer step (`optimizer.step()`, `scaler.step(optimizer)`) in a
        training iteration -- a loop body that runs a backward pass, or a per-iteration
        step function such as `train_step(batch)` -- when nothing in that iteration clears
        the gradients of that optimizer. Clearing counts in any form and at any point of
        the iteration: `optimizer.zero_grad()`, `optimizer.zero_grad(set_to_none=True)`,
        `model.zero_grad()` on the model the optimizer was built from, `p.grad = None` or
        `p.grad.zero_()` over the parameters, any gradient written into `p.grad` that does not
        read the old one (`p.grad = worker_p.grad.clone()`: gradients computed on another
        replica and copied in replace these; `p.grad = p.grad * 0.5` keeps them), or a helper
        of the same file that does one of these. Each optimizer is judged on its own (a GAN's two optimizers), and a clear
        that runs only on some iterations -- once before the loop, or in one branch only
        (e.g. only when AMP is on) -- does not cover a step that runs on the others; a clear
        at the start of an accumulation window (`if i % accum == 0:`, or `if left == n:` with
        a countdown the step resets, `if not left: opt.step(); left = n`) does, so does a clear
        whose conditions the step's own conditions force (`if opt is not None:` around the
        clear, `if opt is not None and loss.requires_grad:` around the step), so does a clear
        under the same condition as every backward of the iteration, each after it
        (`if loss_ok: opt.zero_grad(); loss.backward()`: a skipped iteration adds no
        gradient), and so does a
        clear behind a flag parameter of the training function (`if do_zero_grad:`) that
        every call of the file keeps on (a call a test expects to raise runs nothing; with no
        call shown, the default decides). A single step,
        outside any loop of its function, of an optimizer that function builds over models
        it builds itself (a test helper giving a fresh optimizer some state; through moves,
        wrappers and calls handed only such models and values that are no model:
        `get_peft_model(SimpleNet(), config)`) starts from
        empty gradients on every call: not reported. Nor is training whose outcome nothing
        reads -- a function that builds a layer and its optimizer, times a loop of steps on
        tensors it made once with a torch factory (`torch.ones(...)`), and lets both go (the
        model is never returned, stored, saved or handed on, and the loss is only
        backpropagated, never printed or kept): a speed benchmark. A toy loop that prints its
        loss, or one that learns from a dataset, is reported. Not judged:
        `test_*` functions (one step to check something), helpers handed the caller's loss
        (`loss_scaler(loss, optimizer)`), and steps given a closure or a distributed-autograd
        context the file does not show (`opt.step(closure)` from elsewhere, `opt.step(context_id)`).
        Nor is a step under a branch the file's constants rule out (`if False:`, `if
        world_size > 1:` with `world_size = 1` bound once): it never runs.
        A function of the file handed to the step -- in any argument, or inside a dict or list
        literal given to it (`opt.step(options={"closure": closure})`) -- runs inside the step,
        as often as the optimizer re-evaluates it: its clear and its backward count.
    """
    why = """
        `backward()` adds into `.grad`; it does not overwrite it. Without clearing, every
        step applies the sum of the gradients of all batches so far: the effective learning
        rate grows with the iteration count and training diverges or stalls, without any
        error message.
    """
    example = """
        optimizer.zero_grad()
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
    """
    instead = """
        for x, y in loader:
            optimizer.zero_grad(set_to_none=True)
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
    """
    VALID = [
        """
import torch
def train(model, loader, optimizer, criterion):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
""",
        """
import torch
def fit(model, loader, epochs):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        for x, y in loader:
            loss = model(x).sub(y).pow(2).mean()
            loss.backward()
            opt.step()
            for p in model.parameters():
                p.grad = None
""",
        """
import torch
optimizer = torch.optim.LBFGS(model.parameters())
for step in range(20):
    def closure():
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        return loss
    optimizer.step(closure)
""",
    ]
    INVALID = [
        """
import torch
def train(model, loader, criterion):
    optimizer = torch.optim.Adam(model.parameters())
    optimizer.zero_grad()
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()  # expect: TL001
""",
        """
import torch
def train_gan(netG, netD, loader):
    optG = torch.optim.Adam(netG.parameters())
    optD = torch.optim.Adam(netD.parameters())
    for real in loader:
        netD.zero_grad()
        lossD = netD(real).mean() - netD(netG(real).detach()).mean()
        lossD.backward()
        optD.step()
        lossG = -netD(netG(real)).mean()
        lossG.backward()
        optG.step()  # expect: TL001
""",
        """
import torch
def train(model, loader, optimizer, scaler, use_amp):
    for x, y in loader:
        if use_amp:
            optimizer.zero_grad()
            scaler.scale(model(x, y)).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            model(x, y).backward()
            optimizer.step()  # expect: TL001
""",
    ]

    def check(self, ctx):
        verdicts: dict[ast.AST, tuple] = {}  # step node -> (cleared?, unit, event)
        for unit in iterations(ctx).step_units:
            stepped = clearing(ctx).stepped_optimizers(unit)
            for index in unit.steps:
                step = unit.events[index]
                if _has_opaque_argument(ctx, step):
                    continue
                if never_runs(ctx, step.node):
                    continue  # under a branch the file's constants rule out (`if False:`)
                if unit.is_loop and steps_fresh_optimizer(ctx, step.node, unit.owner):
                    continue  # a fresh model and optimizer each iteration: no gradient carries over
                if steps_fresh_model_once(ctx, step.node):
                    continue  # one step per call, on parameters each call builds: nothing to carry over
                if trains_unobserved(ctx, step.node):
                    continue  # a benchmark: nothing reads the loss or the trained model
                ok = _cleared(ctx, unit, step, stepped)
                previous = verdicts.get(step.node)
                if previous is None:
                    verdicts[step.node] = (ok, unit, step)
                elif unit.is_loop:
                    # Any loop that steps without clearing is a bug in that loop.
                    if not ok and (previous[0] or not previous[1].is_loop):
                        verdicts[step.node] = (ok, unit, step)
                elif ok and not previous[1].is_loop:
                    # Functions: an outer per-iteration function that clears covers the inner one.
                    verdicts[step.node] = (ok, unit, step)
        for node, (ok, unit, step) in verdicts.items():
            if not ok:
                yield self.report(node, self._message(ctx, unit, step), evidence=(unit, step))

    @staticmethod
    def _message(ctx, unit, step) -> Message:
        opt = step.target or "optimizer"
        where = f"the loop at line {unit.owner.lineno}" if unit.is_loop else f"`{unit.owner.name}()`"
        once = unit.is_loop and any(e.kind in CLEAR_KINDS for e in iterations(ctx).function_events_around(unit))
        hint = " (clearing once before the loop is not enough)" if once else ""
        window = _accumulation_window(ctx, unit, step)
        if window is None:
            advice = f"call `{opt}.zero_grad()` once per iteration{hint}"
        else:
            # Clearing every iteration would throw away the accumulated micro-batches (TS106's advice).
            advice = (
                f"the loop accumulates gradients ({window}): call `{opt}.zero_grad()` once per optimizer "
                f"step, right after `{ctx.quote(step.node)}`{hint}"
            )
        return Message(
            f"`{ctx.quote(step.node)}` applies gradients that are never cleared in {where}",
            why="`.backward()` adds to `.grad`, so each step uses the sum of all batches so far",
            help=advice,
        )


def _accumulation_window(ctx, unit, step) -> str | None:
    """How the iteration accumulates gradients before ``step`` on purpose, in words; None when it does not."""
    for _, evidence in gradient_accumulation(ctx).accumulated_backwards(unit, unit.events.index(step)):
        if evidence.kind == "micro_loop":
            return f"micro-step loop at line {evidence.node.lineno}"
        if evidence.test is not None:
            return f"it steps only when `{ast.unparse(evidence.test)}`"
    return None


def _cleared(ctx, unit, step, stepped) -> bool:
    """Whether, on every path that reaches ``step``, some clear of its optimizer runs in the iteration."""
    step_tests: dict[tuple, list] = {}
    for guard in step.guards:
        step_tests.setdefault(guard_key(ctx, guard), []).append(guard[0])
    accumulation = gradient_accumulation(ctx)
    forced = forced_keys(ctx, step)
    needs: list[tuple] = []  # (clear, the conditions it needs beyond those of the step)
    for event in unit.events:
        if event.kind not in CLEAR_KINDS or not clearing(ctx).clears(event, step, stepped):
            continue
        # Conditions the clear needs beyond those of the step; accumulation windows
        # (zero at the window's start, step at its end) are the same iterations.
        extra = [
            g
            for g in event.guards
            if not _same_condition(ctx, g[0], step_tests.get(guard_key(ctx, g), ()))
            and not _implied_by_step(ctx, g, step, forced)
            and not accumulation.is_accumulation_test(g[0])
            and not accumulation.rearmed_by_step(g, step)
            and not _cleared_by_contract(ctx, event, g, step)
            and not _gates_every_backward(unit, event, g)
        ]
        needs.append((event, extra))
    # A helper's branches on a mode its call passes (`reset(opt, mode)` for each mode of a literal):
    # the step is cleared when it is for every value the calls may pass.
    tests = [(g[0], event.via) for event, extra in needs for g in extra if event.via]
    return all(_cleared_in(ctx, needs, scenario) for scenario in call_scenarios(ctx, tests))


def _cleared_in(ctx, needs, scenario) -> bool:
    """Whether some clear runs on every path when the helpers' tests take ``scenario``'s truths."""
    residuals: set[frozenset] = set()
    for event, extra in needs:
        truths = [(g, decided_in(scenario, g[0], event.via)) for g in extra]
        if any(truth is not None and truth != g[1] for g, truth in truths):
            continue  # this clear's branch is not taken under these values
        residuals.add(frozenset(guard_key(ctx, g) for g, truth in truths if truth is None))
    return frozenset() in _merge_branches(residuals)


def _gates_every_backward(unit, clear, guard) -> bool:
    """Whether the clear's ``guard`` is a condition of every backward of the iteration, each after
    the clear in that same branch (``if loss_ok: opt.zero_grad(); loss.backward()``): the
    iterations that skip the clear add no gradient, so no backward ever adds to gradients an
    earlier iteration left, whatever the step then applies."""
    test, holds = guard
    start = next(i for i, e in enumerate(unit.events) if e is clear)
    depth = len(clear.loops)
    backwards = [(i, e) for i, e in enumerate(unit.events) if e.kind in BACKWARD_KINDS]
    return bool(backwards) and all(
        i > start
        and e.loops[:depth] == clear.loops  # the clear runs whenever the backward's loops run
        and any(t is test and branch == holds for t, branch in e.guards)
        for i, e in backwards
    )


def _implied_by_step(ctx, guard, step, forced) -> bool:
    """Whether the step's own conditions force the clear's ``guard`` (``if optimizer is not None:``
    around the clear, ``if optimizer is not None and loss.requires_grad:`` around the step): every
    iteration that steps has taken the clear's branch too. The test must read, where the step runs,
    what it read at the clear (nothing rebinds its names in between), and sit in the same function."""
    test = guard[0]
    if not isinstance(test, ast.expr) or not isinstance(step.node, ast.AST) or not guard_implied(ctx, guard, forced):
        return False
    return dataflow(ctx).same_values(test, step.node) is True


def _cleared_by_contract(ctx, clear, guard, step) -> bool:
    """Whether the clear's ``guard`` is a flag of the function both sit in (``if optimizer and
    do_zero_grad:``) that its callers keep: beyond what the step's own conditions already hold,
    the test reads only parameters, and no call that runs passes a value turning the clear off."""
    func = ctx.enclosing_function(clear.node)
    test, holds = guard
    if clear.via or func is None or ctx.enclosing_function(step.node) is not func or not isinstance(test, ast.expr):
        return False
    given = {ast.dump(expr) for t, branch in step.guards for expr, truth in consequences(t, branch) if truth}
    if holds and isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        rest = [operand for operand in test.values if ast.dump(operand) not in given]
        test = rest[0] if len(rest) == 1 else ast.BoolOp(op=ast.And(), values=rest) if rest else None
    if test is None:
        return False
    # A flag the step itself branches on (the clear in the AMP branch, the step in the other) is no contract.
    step_names = {n.id for t, _ in step.guards for n in ast.walk(t) if isinstance(n, ast.Name)}
    flags = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
    return not flags & step_names and kept_by_every_call(ctx, func, test, holds)


def _same_condition(ctx, test, step_tests) -> bool:
    """Whether the clear's ``test`` is one of the step's tests of the same text (negations folded)
    on names nothing rebinds between the two: then both run on the same iterations. Tests in
    different functions (a helper's condition) are taken by their text."""
    flow = dataflow(ctx)
    return any(
        other is test or not isinstance(test, ast.expr) or flow.same_values(test, other) is not False
        for other in step_tests
    )


def _merge_branches(residuals: set[frozenset]) -> set[frozenset]:
    """Merge ``A + (t, True)`` and ``A + (t, False)`` into ``A`` until nothing changes, so that a
    clear in each branch of one ``if`` covers the step."""
    changed = True
    while changed and frozenset() not in residuals and len(residuals) > 1:
        changed = False
        for a in list(residuals):
            for key in a:
                text, branch = key
                if not isinstance(branch, bool):
                    continue
                twin = (a - {key}) | {(text, not branch)}
                merged = a - {key}
                if twin in residuals and merged not in residuals:
                    residuals.add(merged)
                    changed = True
    return residuals


def _has_opaque_argument(ctx, step) -> bool:
    """``opt.step(context_id)`` (DistributedOptimizer) or ``opt.step(closure)`` with a closure this
    file does not show: the step manages its gradients in ways the linter cannot see."""
    call = step.node
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "step"):
        return False  # xm.optimizer_step(optimizer)
    if object_roles(ctx).role_of(call.func.value) == Role.SCALER:
        return False
    args = list(call.args) + [kw.value for kw in call.keywords if kw.arg == "closure"]
    return bool(args) and not call_events(ctx).step_closures(call)
