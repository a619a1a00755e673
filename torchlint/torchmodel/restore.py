"""Switches to eval mode inside a training loop that nothing undoes (TL007 train-mode-not-restored).

For every training loop (innermost first), the events of one iteration are read as a cycle:
after a `model.eval()` (or the call into a function that makes one), is there a `.train()` on
the same model before the next training step -- later in the iteration, at the top of the next
one (the training function's own `model.train()`), or in the same inner phase loop? Switches
that do not serve an evaluation are left alone: EMA/teacher/target copies, models no stepped
optimizer trains, a network built in the iteration by a module constructor (an evaluation copy
loaded with the trained weights), batch-norm layers frozen in a `.modules()` walk, an
unconditional `eval()` before any step (fine-tuning with frozen statistics), a switch followed by `break`, and helpers
that restore a saved mode (`model.train(was_training)`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import is_abstract, resolve_local_call
from torchlint.analysis.conditions import never_runs
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.imports import symbol
from torchlint.analysis.nodes import last_name, name_ids, position
from torchlint.analysis.unpacking import call_argument
from torchlint.torchmodel.evaluation import evaluation_analysis
from torchlint.torchmodel.events import BACKWARD_KINDS, STEP_KINDS, EventKind
from torchlint.torchmodel.forward_calls import same_model
from torchlint.torchmodel.fresh_runs import constructs_new_module
from torchlint.torchmodel.iterations import iterations
from torchlint.torchmodel.roles import object_roles

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext


@dataclass(frozen=True)
class UnrestoredEval:
    """A switch to eval mode inside a training loop that no ``train()`` undoes before the next step."""

    site: ast.AST  # the `model.eval()` call, or the call into the function that makes it
    switch: ast.AST  # the `model.eval()` call itself
    loop: ast.AST  # the training loop whose next iteration trains in eval mode
    target: str | None


_FROZEN = re.compile(r"(^|[._])(ema|teacher|target|frozen|ref|reference|pretrained|swa|averaged)([._]|$)", re.I)


def _frozen_copy(target: str | None) -> bool:
    """A model kept in eval mode on purpose: an EMA/teacher/target copy, never trained by the step."""
    return target is None or bool(_FROZEN.search(target))


def _depth(ctx, node) -> int:
    return sum(1 for _ in ctx.ancestors(node))


# Events after which no step of any loop around them follows.
_LEAVES_ALL = frozenset({EventKind.RETURN, EventKind.PROCESS_EXIT})
_SUBMODULE_WALKS = frozenset({"modules", "children", "named_modules", "named_children"})


class RestoreAnalysis:
    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self.evaluation = evaluation_analysis(ctx)

    @cached_property
    def unrestored(self) -> list[UnrestoredEval]:
        found: dict[ast.AST, UnrestoredEval] = {}
        if not any(e.kind is EventKind.EVAL for e in self.evaluation.mode_switches):
            return []  # no `.eval()` / `.train(False)` anywhere in this file (helpers included)
        loops = iterations(self.ctx).training_loops
        # Innermost training loops first: they judge an eval inside them most precisely.
        ordered = sorted(loops, key=lambda loop: -_depth(self.ctx, loop))
        judged: set[ast.AST] = set()
        for loop in ordered:
            events = iterations(self.ctx).loop_events.get(loop, [])
            trains = [i for i, e in enumerate(events) if e.kind in BACKWARD_KINDS | STEP_KINDS]
            if not trains:
                continue
            for index, event in enumerate(events):
                if event.kind is not EventKind.EVAL or event.node in judged:
                    continue
                judged.add(event.node)
                if _frozen_copy(event.target) or self._hands_frozen_copy(event):
                    continue
                if not self._evaluates(events, index, trains):
                    continue
                if self._walks_submodules(event) or self._restores_saved_mode(event):
                    continue
                if not event.via and not self._may_be_trained(event.target, events):
                    continue  # a frozen backbone switched to eval; the optimizer trains something else
                if self._switches_fresh_copy(event, loop, events):
                    continue  # a network built for evaluation (weights loaded from the model): not the trained one
                if self._ends_after(events, index):
                    continue  # `model.eval(); ...; break`: no further training step follows
                if self._mode_left_to_code_elsewhere(loop):
                    continue  # a step declared here and implemented elsewhere may set the mode itself
                if not self._restored(events, index, trains) and self._mode_matters(event):
                    found.setdefault(event.site, UnrestoredEval(event.site, event.node, loop, event.target))
        return sorted(found.values(), key=lambda u: position(u.site))

    def _mode_left_to_code_elsewhere(self, loop) -> bool:
        """The training iteration runs a method declared in this file but implemented elsewhere
        (``@abstractmethod``, ``raise NotImplementedError``; a trainer base class whose subclasses
        define ``rollout()``/``compute_loss()``): what that code does to the mode -- a PPO rollout
        calling ``policy.eval()`` every step, a loss calling ``policy.train()`` -- cannot be read here,
        so the mode at the next training step is unknown."""
        pending = [loop]
        seen: set = set()
        while pending and len(seen) < 40:
            node = pending.pop()
            for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
                callee = resolve_local_call(self.ctx, call)
                if callee is None or callee in seen:
                    continue
                seen.add(callee)
                if is_abstract(callee):
                    return True
                pending.append(callee)
        return False

    def _evaluates(self, events, index, trains) -> bool:
        """Whether the switch serves an evaluation: it comes after the iteration's training step,
        under a condition (periodic evaluation), or inside an evaluation function. An unconditional
        `model.eval()` before any step (fine-tuning with frozen batch-norm statistics) is deliberate."""
        event = events[index]
        if trains[0] < index:
            return True
        if self._evaluation_switch(event):
            return True  # reached through a call into an evaluation function (`validate(model)` before training)
        # A condition of the loop's own code (`if epoch % 5 == 0: model.eval()`) is periodic evaluation;
        # one inside the training function it calls (`if freeze_bn: model.eval()`) configures training.
        home = self.ctx.enclosing_function(event.via[0]) if event.via else None
        return any(self.ctx.enclosing_function(test) is home for test, _ in event.guards if event.via) or (
            bool(event.guards) and not event.via
        )

    def _walks_submodules(self, event) -> bool:
        """`for m in model.modules(): if isinstance(m, nn.BatchNorm2d): m.eval()`: freezing some
        layers on purpose, not switching the model to evaluation."""
        call = event.node
        receiver = call.func.value if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) else None
        if not isinstance(receiver, ast.Name):
            return False
        for loop in self.ctx.enclosing_loops(call):
            if (
                isinstance(loop, (ast.For, ast.AsyncFor))
                and receiver.id in name_ids(loop.target)
                and isinstance(loop.iter, ast.Call)
                and last_name(loop.iter.func) in _SUBMODULE_WALKS
            ):
                return True
        return False

    def _restores_saved_mode(self, event) -> bool:
        """The function making the switch also restores a saved mode (`model.train(was_training)`,
        typically a context manager's `finally`): `train(<variable>)` is no event of its own."""
        func = self.ctx.enclosing_function(event.node)
        return bool(event.via) and func is not None and func in self._saved_mode_restorers

    @cached_property
    def _saved_mode_restorers(self) -> frozenset:
        found = set()
        for call in self.ctx.calls:
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr == "train" and call.args:
                if not isinstance(call.args[0], ast.Constant):
                    found.add(self.ctx.enclosing_function(call))
        return frozenset(found)

    def _may_be_trained(self, target: str | None, events, unknown: bool = True) -> bool:
        """False only when every optimizer stepped in the iteration is known to be built from
        models other than ``target`` (`head_opt = SGD(head.parameters())` while `backbone.eval()`);
        an optimizer whose parameters cannot be told answers ``unknown``."""
        built_from = object_roles(self.ctx).optimizer_models
        trained: set[str] = set()
        for event in events:
            if event.kind is EventKind.STEP:
                models = built_from.get(event.target or "")
                if not models:
                    if unknown:
                        return True  # an optimizer whose parameters cannot be told
                    continue
                trained |= models
        return not trained or any(same_model(model, target) for model in trained)

    def _switches_fresh_copy(self, event, loop, events) -> bool:
        """The switched object, read at the loop's call site, is built in the loop's iteration by a
        module constructor (``eval_net = Net(); eval_net.load_state_dict(model.state_dict());
        validate(eval_net)``) and no optimizer stepped in the loop trains it: a separate object, so
        its mode is not the trained model's. Object identity, not names, decides."""
        switched = self._switched_in_loop_terms(event)
        if switched is None:
            return False
        origins = dataflow(self.ctx).origins(switched)
        fresh = bool(origins) and all(
            isinstance(origin, ast.Call)
            and constructs_new_module(self.ctx, origin)
            and any(ancestor is loop for ancestor in self.ctx.ancestors(origin))
            for origin in origins
        )
        return fresh and not self._may_be_trained(symbol(switched), events, unknown=False)

    def _hands_frozen_copy(self, event) -> bool:
        """The loop's call hands the switching function a name that only a frozen copy can reach
        (``if args.use_ema: test_model = ema_model`` / ``else: test_model = model`` with the flag
        shown constant): bindings that never run (``conditions.never_runs``) do not count."""
        switched = self._switched_in_loop_terms(event)
        if switched is None or not event.via:
            return False
        live = [b for b in dataflow(self.ctx).reaching(switched) if not never_runs(self.ctx, b.stmt)]
        return bool(live) and all(
            b.kind == "assign" and isinstance(b.value, (ast.Name, ast.Attribute)) and _frozen_copy(symbol(b.value))
            for b in live
        )

    def _switched_in_loop_terms(self, event) -> ast.AST | None:
        """The receiver of the switch (``model`` of ``model.eval()``), followed from parameter to
        argument through the calls that reached it, as written at the outermost call site; None when
        it is not a plain parameter chain."""
        call = event.node
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            return None
        receiver = call.func.value
        for site in reversed(event.via):
            function = resolve_local_call(self.ctx, site)
            if function is None or not isinstance(receiver, ast.Name):
                return None
            receiver = call_argument(self.ctx, site, function, receiver.id)
        return receiver if isinstance(receiver, ast.Name) else None

    @staticmethod
    def _ends_after(events, index) -> bool:
        """A `break` or `return` that certainly runs after the switch, leaving the loop, or a call
        that ends the process (`evaluate(); exit()` to try the evaluation once)."""
        event = events[index]
        for other in events[index + 1 :]:
            if other.kind in _LEAVES_ALL and event.guards[: len(other.guards)] == other.guards:
                return True
            if (
                other.kind is EventKind.BREAK
                and other.loops == event.loops
                and event.guards[: len(other.guards)] == other.guards
            ):
                return True
        return False

    def _restored(self, events, index, trains) -> bool:
        evaluation = events[index]
        first_train = trains[0]
        if self._training_sets_eval(events, evaluation, first_train):
            return True  # the training code owns the mode: it trains in eval mode on purpose
        for j, other in enumerate(events):
            if other.kind is EventKind.SET_MODE and j < first_train and self._same_model(other, evaluation):
                if self._may_say_train(other):
                    return True  # `model.train(is_train)` at the start of the training function
            if other.kind is not EventKind.TRAIN or not self._same_model(other, evaluation):
                continue
            if j > index:  # later in the same iteration
                return True
            if j < first_train:  # at the top of the next iteration, before its first training step
                return True
            if evaluation.loops and evaluation.loops[-1] in other.loops:
                return True  # in the same inner loop (a train/val phase loop): its next pass restores
        return False

    def _may_say_train(self, event) -> bool:
        """``model.train(flag)`` whose flag may be true (``is_train = split == "train"``): before the
        iteration's first training step, that step runs in the mode the flag sets, which is
        training mode unless every value reaching the flag is a literal false."""
        origins = dataflow(self.ctx).origins(event.arg, parameters=True)
        return not all(isinstance(o, ast.Constant) and not o.value for o in origins)

    def _training_sets_eval(self, events, evaluation, first_train) -> bool:
        """An unconditional switch of the same model to eval mode before the iteration's first
        training step (a linear probe's `train()` starting with `model.eval()` to keep the frozen
        backbone's statistics): the step runs in eval mode whatever evaluation did before it."""
        for other in events[:first_train]:
            if other.kind is EventKind.TRAIN and self._same_model(other, evaluation):
                return False
            if other.kind is EventKind.EVAL and other.node is not evaluation.node and not other.guards:
                if self._same_model(other, evaluation) and not self._evaluation_switch(other):
                    return True
        return False

    def _evaluation_switch(self, event) -> bool:
        """A switch made by an evaluation function (`validate()` called before training)."""
        return bool(event.via) and self.evaluation.is_eval_function(self.ctx.enclosing_function(event.node))

    def _mode_matters(self, event) -> bool:
        """The switched model behaves differently in eval mode (only a model known to have no
        dropout, batch-norm or similar layer does not)."""
        call = event.node
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            return True
        return self.evaluation.mode_matters(call.func.value)

    def _same_model(self, a, b) -> bool:
        """Whether two mode switches may concern the same model. Names only compare within one
        function: across a call, `trainable_module.train()` may well be the caller's `model`."""
        enclosing = self.ctx.enclosing_function
        if enclosing(a.node) is not enclosing(b.node):
            return True
        return any(same_model(x, y) for x in self._mode_sharers(a) for y in self._mode_sharers(b))

    def _mode_sharers(self, event) -> set[str | None]:
        """The symbols whose mode history a switch's target shares: the target, and what data flow
        shows its name bound to where it is a model or a part of one (``_model = model.module``,
        ``net = model``, ``head = model.head``): an alias is the same object, and a child changes
        mode with its parent (``model.train()`` restores ``model.module``)."""
        target = event.target
        if target is None:
            return {None}
        root, dot, rest = target.partition(".")
        found: set[str | None] = {target}
        for binding in dataflow(self.ctx).reaching(root, event.node):
            bound = symbol(binding.value) if binding.kind == "assign" and binding.value is not None else None
            if bound is not None and isinstance(binding.value, (ast.Name, ast.Attribute)):
                found.add(bound + dot + rest)
        return found


def restore_analysis(ctx: FileContext) -> RestoreAnalysis:
    return ctx.shared("restore", lambda: RestoreAnalysis(ctx))
