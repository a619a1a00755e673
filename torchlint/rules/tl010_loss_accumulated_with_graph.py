"""TL010 loss-accumulated-with-graph."""

from __future__ import annotations

import ast
from collections import defaultdict

from torchlint.analysis.backedge import element_holder_rebound_around, rebound_around
from torchlint.analysis.callgraph import call_graph
from torchlint.analysis.containers import only_unaddable
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.imports import symbol
from torchlint.analysis.nodes import last_name, method_call
from torchlint.engine.rule import Message, Rule, register
from torchlint.torchmodel.accumulation import gradient_accumulation
from torchlint.torchmodel.gradmode import lexical_grad_disabler
from torchlint.torchmodel.graphs import Graph, graph_values
from torchlint.torchmodel.iterations import iterations

# What a list of losses is summed or averaged with later.
LIST_AGGREGATORS = frozenset({"sum", "stack", "cat", "mean", "average", "fsum", "tensor", "nanmean"})


@register
class LossAccumulatedWithGraph(Rule):
    code = "TL010"
    name = "loss-accumulated-with-graph"
    severity = "warning"
    summary = "A running total keeps every iteration's autograd graph alive."
    what = """
        Reports, inside a loop, a running total of a loss tensor that is still attached
        to the autograd graph: `total += loss`, `total = total + loss`,
        `meter[k] += v` over a dict of losses, or `losses.append(loss)` when the list is
        summed or averaged later. A value is attached when the data flow derives it from
        something that carries a graph: the output of a model, a loss (a criterion or a
        functional loss) unless every operand is shown to carry none (a built-in loss of
        `.detach()`ed outputs and of the batches a `DataLoader` yields is a plain
        number), the value sent to `backward()`, what a function returns when
        its returns carry one, and tensor operations on such -- with no `.item()`,
        `.detach()` or `float()` cutting it from the graph. Values the linter knows
        nothing of (an option of a config namespace such as `args.num_envs`, a
        parameter, an opaque call) are not taken for attached, even when the loss reads
        the same object. A total kept on `self` (or in a global) by a method the
        training loop calls once per batch (`self.running_loss += loss` in
        `train_step`) counts as well. Totals computed under `torch.no_grad()`, and sums
        that are themselves backpropagated (several losses added into one, a list of
        values stacked into the loss), are fine, and so is a total whose value at the `+=`
        cannot come round from the previous iteration: the loop rebinds it on every path
        from the top of the body to the `+=` (`loss_v = policy + value` and then
        `loss_v += entropy` for the log; `losses = []` at the top of the step; a
        `continue` before the rebinding skips the `+=` too) or on every path from the `+=`
        to the next iteration (a rebinding to a plain number made of the total itself,
        `k = float(k)` after `k = k + loss`, counts: the number goes round, the graph does
        not), or an in-place edit of an element of such a value
        (`preds[i] += preds[j]` on this iteration's `preds = model(x)`). A total the loop
        resets on every iteration that steps the optimizer -- in the branch of the step
        (`if (i + 1) % accum == 0:`), or under `if accelerator.sync_gradients:` when the step
        runs inside `accelerator.accumulate(model)` -- holds the graphs of one accumulation
        window at most, graphs that live until that window's step anyway, and is not reported
        either; one reset only when logging (`if i % log_every == 0:`) or once per epoch is.
        A total that is a dict or a set wherever it comes from (`other_loss = {k: 0. for k
        in widths}` and then `other_loss += loss`) is not reported: `+` on it raises `TypeError`
        on the first pass, so nothing is kept. Of the tuple a criterion hands back (`loss,
        per_class = criterion(out, y)`), an element is attached when the criterion's `forward`
        does not show it plain, or when it is the one sent to `backward()`; of a criterion the
        linter cannot read (a parameter), which element is the loss is not known. Gradients asked of
        autograd without `create_graph=True` (`torch.autograd.grad(loss, x)[0]`,
        `torch.autograd.functional.jacobian(f, x)`) carry no graph.
    """
    why = """
        A tensor that requires grad carries its `grad_fn` and, through it, the graph
        of the iteration that produced it. Adding it to a running total links every
        iteration's graph into one growing chain, so memory use climbs for the whole
        epoch (and the "running loss" is itself a tensor with history). This is the
        first item of PyTorch's FAQ on out-of-memory errors.
    """
    example = """
        running_loss = 0.0
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            running_loss += loss
    """
    instead = """
        running_loss = 0.0
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
    """
    VALID = [
        """
def train(model, loader, criterion, optimizer):
    running_loss = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        running_loss += loss.item() * x.size(0)
    return running_loss
""",
        """
def step(model, heads, x, ys, optimizer):
    loss = 0
    for head, y in zip(heads, ys):
        loss += head(model(x), y)
    loss.backward()
    optimizer.step()
""",
    ]
    INVALID = [
        """
def train(model, loader, criterion, optimizer):
    total = 0
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss  # expect: TL010
    return total / len(loader)
""",
        """
import torch
def train(model, loader, optimizer):
    losses = []
    for batch in loader:
        loss_dict = model(batch)
        loss = sum(loss_dict.values())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss)  # expect: TL010
    return torch.stack(losses).mean()
""",
    ]

    def check(self, ctx):
        candidates = _candidates(ctx)
        if not candidates:
            return
        graphs = graph_values(ctx)
        flow = dataflow(ctx)
        training_loops = None
        for scope, found in candidates.items():
            for node, accumulator, added in found:
                if lexical_grad_disabler(ctx, node) is not None:
                    continue
                # Only totals kept across training iterations grow without bound; a few
                # micro-steps summed inside one step (MC samples, closures) do not.
                if training_loops is None:
                    training_loops = set(iterations(ctx).training_loops)
                if not _kept_across_iterations(ctx, graphs, node, accumulator, training_loops):
                    continue
                if graphs.feeds_backward(node, accumulator):
                    continue
                if graphs.state(added, node) is not Graph.ATTACHED:
                    continue
                if not isinstance(node, ast.Call) and isinstance(accumulator, ast.Name):
                    if only_unaddable(ctx, accumulator, node):
                        continue  # a dict or a set: `+` raises on the first pass, nothing piles up
                if isinstance(node, ast.Call) and not _aggregated_later(ctx, flow, scope, accumulator):
                    continue
                yield self.report(node, self._message(ctx, node, accumulator, added), evidence=(accumulator, added))

    @staticmethod
    def _message(ctx, node, accumulator, added) -> Message:
        value = ctx.quote(added, limit=40) or "loss"
        # `.item()` must apply to the whole value: `(loss / n).item()`, not `loss / n.item()`.
        whole = value if isinstance(added, _ATOMS) else f"({value})"
        if isinstance(node, ast.Call):
            return Message(
                f"`{ctx.quote(node)}` keeps a tensor still attached to the autograd graph in a list that "
                "grows across iterations",
                why="every iteration's graph stays alive and memory grows",
                help=f"append `{whole}.item()` (or `{whole}.detach()`) instead",
            )
        target = ctx.quote(accumulator) or "total"
        return Message(
            f"`{target}` accumulates `{value}`, a tensor still attached to the autograd graph",
            why="every iteration's graph stays alive and memory grows until the loop ends",
            help=f"add `{whole}.item()` (or `{whole}.detach()`) instead",
        )


# Expressions a method call binds to as a whole (no parentheses needed before `.item()`).
_ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)


def _kept_across_iterations(ctx, graphs, node, accumulator, training_loops) -> bool:
    """The total outlives training iterations: it grows inside a training loop that does not
    rebind it afresh each iteration (``outputs = []`` at the top of the step, ``loss = criterion(...)``
    before ``loss += ...``, ``preds = model(x)`` before ``preds[i] += preds[j]``: what it holds then
    lives one iteration only), or it is kept on ``self``
    (or in a global) by a function the training loop calls once per batch -- unless a loop of that
    function starts it afresh on each of its iterations (``d_loss = 0`` at the top of each
    discriminator step of a global ``d_loss``): then no call adds to what an earlier one left.
    A rebinding to a plain number counts as starting afresh even when it reads the total
    (``kt = float(kt)`` after ``kt = kt + loss``): the number goes round, the graph does not."""
    name = symbol(accumulator)

    def plain(value) -> bool:
        return graphs.state(value) is Graph.PLAIN

    if any(
        loop in training_loops
        and (name is None or not _reset_each_update(ctx, loop, node, name, plain))
        and not element_holder_rebound_around(ctx, loop, accumulator, node)
        for loop in ctx.enclosing_loops(node)
    ):
        return True
    if not _outlives_its_function(ctx, accumulator):
        return False
    func = ctx.enclosing_function(node)
    if name is not None and any(
        rebound_around(ctx, loop, node, name, drops=plain) for loop in ctx.enclosing_loops(node)
    ):
        return False  # each iteration of its own loop starts it afresh: no call adds to the last one's total
    for site in call_graph(ctx).callers(func) if func is not None else ():
        if any(loop in training_loops for loop in ctx.enclosing_loops(site)):
            return True
    return False


def _reset_each_update(ctx, loop, node, name, plain) -> bool:
    """What ``name`` holds at ``node`` does not come round to the next iteration of the training
    loop ``loop`` that updates the weights: the loop rebinds it (see ``rebound_around``) on every
    path of the iterations that step the optimizer -- in the branch that steps
    (``if (i + 1) % accum == 0:``), or under ``if accelerator.sync_gradients:`` when the step runs
    inside ``accelerator.accumulate(model)``. The total then holds the graphs of one accumulation
    window at most, graphs that live until that window's backward and step anyway; a reset under
    another condition (``if step % log_every == 0:``) or after the loop bounds nothing. Seen from an
    epoch loop around the batch loop, the batch loop's updating iterations are the ones asked about."""
    loops = ctx.enclosing_loops(node)
    accumulation = gradient_accumulation(ctx)
    known = [accumulation.update_test_values(inner) for inner in loops[: loops.index(loop) + 1]]

    def given(test) -> bool | None:
        return next((value for value in (each(test) for each in known) if value is not None), None)

    return rebound_around(ctx, loop, node, name, drops=plain, given=given)


def _outlives_its_function(ctx, accumulator) -> bool:
    """``self.total`` or a name the function declares ``global``."""
    if isinstance(accumulator, ast.Attribute) and isinstance(accumulator.value, ast.Name):
        return accumulator.value.id == "self"
    func = ctx.enclosing_function(accumulator)
    if isinstance(accumulator, ast.Name) and func is not None:
        return ctx.declares_global(func, accumulator.id)
    return False


def _candidates(ctx) -> dict[ast.AST, list[tuple[ast.AST, ast.AST, ast.AST]]]:
    """Accumulations inside loops (or into state that outlives a function, which a loop may call
    once per batch), by scope: (node to report, accumulator, value added)."""
    flow = dataflow(ctx)
    found: dict[ast.AST, list] = defaultdict(list)
    for node in ctx.nodes(ast.AugAssign):
        if (
            isinstance(node.op, ast.Add)
            and _plausible_value(node.value)
            and (ctx.enclosing_loops(node) or _outlives_its_function(ctx, node.target))
        ):
            found[flow.scope_of(node)].append((node, node.target, node.value))
    for node in ctx.nodes(ast.Assign):
        value = node.value
        if len(node.targets) != 1 or not isinstance(value, ast.BinOp) or not isinstance(value.op, ast.Add):
            continue
        target = symbol(node.targets[0])
        if target is None:
            continue
        for same, other in ((value.left, value.right), (value.right, value.left)):
            if symbol(same) == target and _plausible_value(other) and ctx.enclosing_loops(node):
                found[flow.scope_of(node)].append((node, node.targets[0], other))
                break
    for stmt in ctx.nodes(ast.Expr):
        call = stmt.value
        found_method = method_call(call)
        if (
            found_method is not None
            and found_method[0] == "append"
            and isinstance(found_method[1], ast.Name)
            and len(call.args) == 1
            and _plausible_value(call.args[0])
            and ctx.enclosing_loops(stmt)
        ):
            found[flow.scope_of(stmt)].append((call, found_method[1], call.args[0]))
    return found


def _plausible_value(expr: ast.AST) -> bool:
    """Cheap filter: a value that could be a loss tensor (not a literal, not a string)."""
    return not isinstance(expr, (ast.Constant, ast.JoinedStr, ast.List, ast.Tuple, ast.Dict, ast.Compare))


def _aggregated_later(ctx, flow, scope, accumulator: ast.Name) -> bool:
    """Whether the list ``accumulator`` is passed to ``sum``/``torch.stack``/``np.mean``... in its scope."""
    for call in ctx.calls:
        if not call.args or not isinstance(call.args[0], ast.Name) or call.args[0].id != accumulator.id:
            continue
        if last_name(call.func) in LIST_AGGREGATORS and flow.scope_of(call) is scope:
            return True
    return False
