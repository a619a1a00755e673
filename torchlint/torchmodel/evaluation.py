"""Evaluation code, and the train/eval and autograd modes that reach it.

Shared by TL005 (eval-without-eval-mode) and TL006 (eval-without-no-grad); TL007
(train-mode-not-restored) builds on it in ``restore.py``.

Evaluation code is a *unit*: a function or a loop that runs the model forward over
validation, test or inference data, without an optimizer step:

* a function named for evaluation (``validate``, ``evaluate``, ``test``,
  ``estimate_loss``, ``predict``, ``run_inference``...), except pytest tests and
  framework hooks (Lightning's ``validation_step``: the framework sets the modes);
* a loop over evaluation data (``for x, y in val_loader``, ``dataloaders["test"]``)
  inside other code (inline validation in an epoch loop, an evaluation script);
* a function the training loop calls that runs the model in a loop of its own
  and trains nothing (``check_accuracy(model, loader)`` after each epoch).

What reaches a unit (``reaching_modes``) is judged in its own function first, then at
every call site of the function in this file, a few calls deep. Which calls run a model,
and the file's mode switches, are in ``forward_calls``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import call_graph, local_base, receiver_method, resolve_callee, resolve_local_call
from torchlint.analysis.context import FUNCTION_TYPES
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.definitions import Definition
from torchlint.analysis.expected_failures import expected_to_raise
from torchlint.analysis.imports import dotted_name
from torchlint.analysis.nodes import walk_function_body
from torchlint.analysis.outcomes import asserts, only_asserts
from torchlint.analysis.summaries import function_summary as run_summary
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.autograd_use import asks_for_gradients, forward_needs_autograd
from torchlint.torchmodel.forward_calls import ForwardCalls, mode_switches, model_expression, same_model, within_spans
from torchlint.torchmodel.frameworks import runs_other_framework
from torchlint.torchmodel.frozen import runs_frozen_model
from torchlint.torchmodel.gradmode import runs_without_grad
from torchlint.torchmodel.input_checks import asserts_on_results
from torchlint.torchmodel.iterations import iterations
from torchlint.torchmodel.mode_dependence import mode_dependence
from torchlint.torchmodel.modules import module_classes
from torchlint.torchmodel.phases import UNDECIDED, EvaluationPhase, PhaseFunctions
from torchlint.torchmodel.provenance import TENSOR_KEEPING_METHODS, model_provenance
from torchlint.torchmodel.reaching_modes import (
    NOT_REACHED,
    REACHED,
    UNKNOWN,
    AutogradMode,
    BlockEvents,
    CallerChain,
    TrainEvalMode,
    Verdict,
)
from torchlint.torchmodel.recording_calls import holds_no_parameters, runs_model_method, runs_recording_helper
from torchlint.torchmodel.training_steps import only_training_steps
from torchlint.torchmodel.untrained_runs import UntrainedRuns

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

__all__ = [
    "EVAL_WORDS",
    "NOT_REACHED",
    "REACHED",
    "UNKNOWN",
    "EvalUnit",
    "EvaluationAnalysis",
    "Verdict",
    "evaluation_analysis",
    "same_model",
]

EVAL_WORDS = frozenset(
    {
        "val",
        "valid",
        "validate",
        "validation",
        "eval",
        "evaluate",
        "evaluation",
        "evaluator",
        "test",
        "testing",
        "dev",
        "predict",
        "prediction",
        "predictions",
        "infer",
        "inference",
        "estimate",
        "holdout",
        "heldout",
    }
)
# Framework hooks run by a trainer that sets the modes itself (Lightning, Fabric loops).
_HOOK = re.compile(r"(_step|_step_end|_epoch_end|_epoch_start|_batch_end|_batch_start|_dataloader|_loop_run)$|^on_")


@dataclass(frozen=True)
class EvalUnit:
    node: ast.AST  # the function or the loop
    kind: str  # "function", "loop", "called-from-training", "phase"
    first_call: ast.Call  # the first model call in it, where TL005/TL006 report
    function: ast.AST | None  # the function holding the first call (None: module level)
    needs_grad: bool  # it runs a backward / autograd.grad (saliency, attacks): not a TL006 case

    phase: EvaluationPhase | None = None  # for kind "phase": the evaluation path of a two-phase function

    @property
    def label(self) -> str:
        if self.phase is not None:
            return self.phase.label
        if isinstance(self.node, FUNCTION_TYPES):
            return f"`{self.node.name}()`"
        if self.kind == "batch":
            return f"the evaluation batch at line {self.node.lineno}"
        return f"the evaluation loop at line {self.node.lineno}"


class EvaluationAnalysis:
    """The evaluation units of a file and the modes that reach them (what TL005-TL007 ask)."""

    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self.blocks = BlockEvents(ctx)
        self.forward = ForwardCalls(ctx)
        self.provenance = model_provenance(ctx)
        self.phases = PhaseFunctions(ctx, self.forward)
        self.finder = EvalUnits(ctx, self.forward, self.blocks, self.provenance, self.phases)
        chain = CallerChain(ctx, self.forward, self.blocks, self.provenance)
        self.autograd = AutogradMode(ctx, chain)
        self.train_eval = TrainEvalMode(ctx, chain, self.autograd)

    @property
    def units(self) -> list[EvalUnit]:
        return self.finder.units

    @property
    def mode_switches(self) -> list:
        return mode_switches(self.ctx)

    def is_eval_function(self, func) -> bool:
        return self.finder.is_eval_function(func)

    def mode_matters(self, expr: ast.AST) -> bool:
        """Whether the model ``expr`` holds is shown to behave differently in train and eval mode
        (dropout, batch norm...: ``mode_dependence``); an unknown model is not."""
        return mode_dependence(self.ctx).shown(expr)

    def mode_dependent_call(self, unit: EvalUnit) -> ast.Call | None:
        """The unit's first model call whose model is shown mode-dependent: an evaluation that runs
        an encoder without dropout and then a decoder with dropout depends on the mode through the
        decoder. None when no model it runs is shown to."""
        calls = [unit.first_call] if unit.phase is not None else self.finder.calls_of(unit)
        return next((c for c in calls if mode_dependence(self.ctx).shown_at(c)), None)

    def recording_call(self, unit: EvalUnit) -> ast.Call:
        """Where the unit is shown to record a graph with autograd on (TL006's anchor): its first call,
        in source order, of a model not shown to hold no parameters (not a metric written as a
        module), or of a model's method that runs the model (``model.process(x)``), that runs with
        autograd on like the first model call; else its first model call."""
        if unit.phase is not None:
            return unit.first_call
        for call in self._recording_candidates(unit):
            if self._output_discarded(call):
                continue
            if call is unit.first_call:
                return call
            if self.autograd.at(call, self.ctx.enclosing_function(call)).reached is NOT_REACHED:
                return call
        return unit.first_call

    def records_graph(self, unit: EvalUnit) -> bool:
        """Whether a model call of the unit may record a graph: not when every model it runs has
        all its parameters frozen before the call (``frozen``) and the unit marks no tensor as
        requiring grad (``needs_grad``)."""
        if unit.phase is not None or unit.needs_grad:
            return True
        return not all(
            self._records_nothing(c) or self._output_discarded(c)
            for c in [unit.first_call, *self._recording_candidates(unit)]
        )

    def _output_discarded(self, call: ast.Call) -> bool:
        """A model call whose value nobody keeps: made as a statement (``model(**dummy)  # should not
        raise``, ``model(x)[0]``) or stored only in names that nothing reads afterwards (a dead store,
        ``_ = model(x)`` in a warm-up loop: ``Dataflow.dead_store``). Its graph dies with the value and
        it evaluates nothing, unless code around it registers hooks that capture what the model
        computes (``register_forward_hook`` in its function or its class's ``__init__``; at module
        level for module-level code). Only a call of the model itself: a helper or a model's method
        may keep what it computes."""
        if not self.forward.is_model_call(call):
            return False
        node: ast.AST = call
        parent = self.ctx.parent(node)
        while isinstance(parent, (ast.Subscript, ast.Attribute)) and parent.value is node:
            node, parent = parent, self.ctx.parent(parent)
        if not (isinstance(parent, ast.Expr) or dataflow(self.ctx).dead_store(parent)):
            return False
        return not any(scope in self._hooking_scopes for scope in self._hook_scopes(call))

    def _hook_scopes(self, call: ast.Call) -> list[ast.AST | None]:
        """Where a hook that sees ``call``'s model would be registered: the function holding the call
        (None: module level) and the ``__init__`` of its class (a feature extractor hooks its layers
        when it is built)."""
        function = self.ctx.enclosing_function(call)
        cls = self.ctx.parent(function) if function is not None else None
        init = [
            m
            for m in (cls.body if isinstance(cls, ast.ClassDef) else [])
            if isinstance(m, FUNCTION_TYPES) and m.name == "__init__"
        ]
        return [function, *init]

    @cached_property
    def _hooking_scopes(self) -> frozenset:
        """The functions (None: module level) whose own code registers a hook on a module."""
        return frozenset(
            self.ctx.enclosing_function(c)
            for c in self.ctx.calls
            if isinstance(c.func, ast.Attribute) and c.func.attr in torch_names.HOOK_REGISTRATIONS
        )

    def _records_nothing(self, call: ast.Call) -> bool:
        """``model(x)``, ``model.forward(x)``, ``model.decoder(h)``, ``model.process(x)`` of a model
        frozen whole or holding no parameters (a metric written as a module: what it records is
        its inputs' graph, from the model that made them), or a call of a function that runs its
        whole body with autograd off."""
        module = model_expression(call)
        if (
            runs_without_grad(self.ctx, call)
            or runs_frozen_model(self.ctx, call, module)
            or holds_no_parameters(self.ctx, module)
        ):
            return True
        return isinstance(call.func, ast.Attribute) and runs_frozen_model(self.ctx, call, call.func.value)

    def _recording_candidates(self, unit: EvalUnit) -> list[ast.Call]:
        """The unit's calls, in source order, of a model not shown to hold no parameters (not a
        metric written as a module), and of a model's methods that run the model."""
        ctx = self.ctx
        calls = [c for c in self.finder.calls_of(unit) if not holds_no_parameters(ctx, model_expression(c))]
        calls += [
            c
            for c in ctx.calls
            if isinstance(c.func, ast.Attribute)
            and ctx.is_inside(c, unit.node)
            and self.forward.is_model(c.func.value)
            and runs_model_method(ctx, c)
        ]
        return sorted(calls, key=lambda c: (c.lineno, c.col_offset))

    def eval_mode(self, unit: EvalUnit, call: ast.Call | None = None) -> Verdict:
        """Whether the model is in eval mode when ``call`` (by default the unit's first model call) runs."""
        if unit.phase is not None:
            return self._phase_verdict(unit.phase, self.phases.eval_mode(unit.phase), self.train_eval)
        if call is None or call is unit.first_call:
            return self.train_eval.at(unit.first_call, unit.function)
        return self.train_eval.at(call, self.ctx.enclosing_function(call))

    def no_grad(self, unit: EvalUnit) -> Verdict:
        """Whether autograd is off when the unit's first model call runs."""
        if unit.phase is not None:
            return self._phase_verdict(unit.phase, self.phases.grad_off(unit.phase), self.autograd)
        return self.autograd.at(unit.first_call, unit.function)

    def _phase_verdict(self, phase, local, mode) -> Verdict:
        """What the evaluation path sets itself, else what reaches its evaluating call; unknown
        when it sets a mode the path does not decide."""
        if local is UNDECIDED:
            return Verdict(UNKNOWN)
        if local is not None:
            return Verdict(REACHED if local else NOT_REACHED)
        caller = self.ctx.enclosing_function(phase.site)
        return Verdict(mode.at(phase.site, caller, depth=1, seen=frozenset({phase.func})).reached)


class EvalUnits:
    """Where a file evaluates a model: functions named for it, loops over evaluation data, and
    functions the training loop calls that run the model over data without training it."""

    def __init__(self, ctx: FileContext, forward: ForwardCalls, blocks: BlockEvents, provenance, phases):
        self.ctx = ctx
        self.forward = forward
        self.blocks = blocks
        self.provenance = provenance
        self.phases = phases

    @cached_property
    def model_calls(self) -> list[ast.Call]:
        """Model calls inside code that may be evaluation code, that evaluate: a model trained or
        loaded in this program run on data (not a shape probe on ``torch.randn(...)``, not a
        freshly built model that nothing trains, nor one run before anything trains it, nor
        another framework's model: ``frameworks``, nor a call a test expects to raise)."""
        calls = [
            c
            for c in self.forward.within(self._candidate_spans) + self._recording_helper_calls
            if not runs_other_framework(self.ctx, c) and not expected_to_raise(self.ctx, c)
        ]
        provenance = self.provenance
        untrained = UntrainedRuns(self.ctx, provenance)
        return [
            call
            for call in calls
            if not (provenance.runs_on_synthetic_input(call) and not untrained.runs_after_training(call))
            and not provenance.fresh_and_untouched(call)
            and not untrained.runs_untrained(call)
        ]

    @cached_property
    def _recording_helper_calls(self) -> list[ast.Call]:
        """Calls, in code that may be evaluation code, of a helper of the project whose own body runs
        a model with autograd on (``self.score_critic(states)``): they record its graph like the
        model call does (``recording_calls``). A helper that holds evaluation code itself is left to
        its own unit."""
        ctx, spans = self.ctx, self._candidate_spans
        evaluating = {ctx.enclosing_function(c) for c in self.forward.within(spans)}
        found = []
        for call in ctx.calls:
            if receiver_method(ctx, call.func) is None or not within_spans(call, spans):
                continue  # a method of the evaluating class (`self.score_critic(...)`), not any helper
            owner = ctx.enclosing_function(call)
            if owner is None or not _words(owner.name) & EVAL_WORDS:
                continue  # only in a function named for evaluation: elsewhere the helper may train
            if self._reaches(resolve_local_call(ctx, call), evaluating, 0):
                continue  # the model calls it reaches are evaluation calls of their own
            if runs_recording_helper(ctx, call):
                found.append(call)
        return found

    def _reaches(self, func: ast.AST | None, targets: set, depth: int) -> bool:
        """Whether ``func`` (a function of this file) is one of ``targets`` or calls one, a few calls deep."""
        if func is None or depth > 3:
            return False
        if func in targets:
            return True
        graph = call_graph(self.ctx)
        calls = [n for n in walk_function_body(func) if isinstance(n, ast.Call)]
        return any(self._reaches(graph.callee(c), targets, depth + 1) for c in calls)

    @cached_property
    def _candidate_spans(self) -> list[tuple[int, int]]:
        """Line spans of functions and loops that could hold evaluation code, judged by names and
        call sites only (no role analysis)."""
        ctx = self.ctx
        spans = []
        for func in ctx.nodes(ast.FunctionDef, ast.AsyncFunctionDef):
            if _words(func.name) & EVAL_WORDS and not _HOOK.search(func.name):
                spans.append((func.lineno, func.end_lineno or func.lineno))
        for loop in ctx.nodes(ast.For, ast.AsyncFor):
            if _expr_words(loop.iter) & EVAL_WORDS:
                spans.append((loop.lineno, loop.end_lineno or loop.lineno))
        if self.blocks.may_train:
            graph = call_graph(ctx)
            with_loops = {ctx.enclosing_function(loop) for loop in ctx.nodes(ast.For, ast.AsyncFor, ast.While)}
            for func in with_loops - {None}:
                if graph.callers(func) and self._called_from_training(func):
                    spans.append((func.lineno, func.end_lineno or func.lineno))
            for func in self.phases.phases:
                spans.append((func.lineno, func.end_lineno or func.lineno))
        for draw in self._evaluation_draws:
            owner = ctx.enclosing_function(draw)
            if owner is not None:
                spans.append((owner.lineno, owner.end_lineno or owner.lineno))
            else:  # a script draws the batch, then runs the model on it in later statements
                spans.append((ctx.enclosing(draw, ast.stmt).lineno, ctx.tree.body[-1].end_lineno or draw.lineno))
        return spans

    @cached_property
    def _evaluation_draws(self) -> list[ast.Call]:
        """``next(iter(val_loader))``: one batch drawn from evaluation data."""
        return [
            call
            for call in self.ctx.calls
            if isinstance(call.func, ast.Name)
            and call.func.id == "next"
            and call.args
            and _expr_words(call.args[0]) & EVAL_WORDS
        ]

    def _runs_on_evaluation_batch(self, call: ast.Call) -> bool:
        """The model is fed (part of) a batch drawn from evaluation data, outside any loop over it:
        evaluation without a loop (a sampling helper showing the generator's output on validation
        images)."""
        draws = set(self._evaluation_draws)
        if not draws:
            return False
        flow = self.provenance.flow
        for arg in [*call.args, *(k.value for k in call.keywords)]:
            if any(origin in draws for origin in flow.origins(arg, _through_batch_access)):
                return True
            if self._unpacked_from(arg, draws, 0):
                return True
        return False

    def _unpacked_from(self, expr: ast.AST, draws: set, depth: int) -> bool:
        """``x, y = next(iter(val_loader)); x = x.cuda(); model(x)``: an element of a drawn batch,
        unpacked (what ``origins`` does not follow into a call's result)."""
        while (inner := _through_batch_access(expr)) is not None:
            expr = inner
        if not isinstance(expr, ast.Name) or depth > 4:
            return False
        for binding in self.provenance.flow.reaching(expr):
            if binding.kind == "unpack" and binding.source in draws:
                return True
            if binding.value is not None and self._unpacked_from(binding.value, draws, depth + 1):
                return True
        return False

    @cached_property
    def units(self) -> list[EvalUnit]:
        """Every evaluation unit of the file, the outermost one for each model call, in source order."""
        ctx = self.ctx
        seen: dict[ast.AST, EvalUnit] = {}
        for call in self.model_calls:
            unit_node, kind = self._unit_of(call)
            if unit_node is None or unit_node in seen:
                continue
            if self.blocks.trains(unit_node) or unit_node in only_training_steps(ctx):
                continue  # it trains, or a caller backpropagates what it returns: a training step
            seen[unit_node] = EvalUnit(unit_node, kind, call, ctx.enclosing_function(call), self._needs_grad(unit_node))
        for func, phase in self.phases.phases.items():
            call = phase.model_call
            if func not in seen and call in self._model_call_set and self._unit_of(call)[0] is None:
                seen[func] = EvalUnit(func, "phase", call, func, False, phase)
        return sorted(seen.values(), key=lambda u: (u.first_call.lineno, u.first_call.col_offset))

    def calls_of(self, unit: EvalUnit) -> list[ast.Call]:
        """The model calls the unit runs, in source order (its first call first)."""
        return [c for c in self.model_calls if c is unit.first_call or self._unit_of(c)[0] is unit.node]

    @cached_property
    def _model_call_set(self) -> frozenset:
        return frozenset(self.model_calls)

    def _unit_of(self, call: ast.Call) -> tuple[ast.AST | None, str]:
        ctx = self.ctx
        loops: list[ast.AST] = []
        functions: list[ast.AST] = []
        for ancestor in ctx.ancestors(call):
            if isinstance(ancestor, (ast.For, ast.AsyncFor, ast.While)):
                if not functions:
                    loops.append(ancestor)
            elif isinstance(ancestor, FUNCTION_TYPES):
                functions.append(ancestor)
            elif isinstance(ancestor, (ast.Lambda,)):
                return None, ""
            elif isinstance(ancestor, ast.ClassDef):
                if self._is_module_like(ancestor):
                    return None, ""  # a module's own methods run in whatever mode its caller set
        for func in reversed(functions):  # the outermost evaluation function wins
            if self.is_eval_function(func) and not self.blocks.trains(func):  # not `train_and_evaluate()`
                return func, "function"
        if not functions or not self._is_excluded_function(functions[0]):
            for loop in reversed(loops):
                if self._is_eval_loop(loop):
                    return loop, "loop"
        if (
            functions
            and loops
            and self._called_from_training(functions[0])
            and not self.blocks.has_backward(functions[0])
        ):
            return functions[0], "called-from-training"
        if self._runs_on_evaluation_batch(call) and not (functions and self._is_excluded_function(functions[0])):
            if functions:
                return functions[0], "function"
            return ctx.enclosing(call, ast.stmt), "batch"
        return None, ""

    def _is_module_like(self, cls: ast.ClassDef) -> bool:
        """A class of this file deriving from nn.Module, or any class defining `forward`
        (its base may live in another file: detectron2's meta-architectures)."""
        if cls.name in module_classes(self.ctx):
            return True
        return any(isinstance(stmt, FUNCTION_TYPES) and stmt.name == "forward" for stmt in cls.body)

    def is_eval_function(self, func) -> bool:
        if self._is_excluded_function(func):
            return False
        return bool(_words(func.name) & EVAL_WORDS)

    def _is_excluded_function(self, func, depth: int = 0) -> bool:
        """Framework hooks, and unit tests: a ``test_*`` function that asserts on what it computes
        checks the code's behaviour, not the model's metrics (told by what it does, not by the path
        of its file); so does a helper that only unit tests call (``_run_detectors(self, cfgs)``
        called from a ``TestCase``'s methods), and a checking helper nothing in its file calls
        whose only outcome is its assertions (it returns, shows and keeps nothing:
        ``check_export(model, x)`` comparing two backends' outputs, for the tests of other files
        to import)."""
        name = func.name
        if _HOOK.search(name):
            return True
        if (name.startswith("test") and self._checks(func)) or self._in_test_case(func):
            return True
        if depth < 3 and name.startswith("_test") and self._checks(func) and self._no_caller_but_tests(func, depth):
            return True  # `_test_merge_layers`: a test's private implementation, named like the test it serves
        return depth < 3 and self._only_called_by_tests(func, depth)

    def _no_caller_but_tests(self, func, depth: int) -> bool:
        """Every caller of ``func`` in this file is a test (or there is none: its tests live elsewhere)."""
        return all(
            caller is not None and not _HOOK.search(caller.name) and self._is_excluded_function(caller, depth + 1)
            for caller in (self.ctx.enclosing_function(site) for site in call_graph(self.ctx).callers(func))
        )

    def _checks(self, func) -> bool:
        """The test asserts on what it computes, itself or through a helper of this file it calls
        (pytest tests that share one checking helper: ``test_linear(): _check_wrapper(nn.Linear(4, 2),
        torch.rand(3, 4))``). An assert that reads only the data it iterates and the program's
        configuration (``assert inputs.size(2) >= args.timesteps`` in a loop over ``test_loader``)
        checks the input, not the code: a script's ``test()`` is still its evaluation. The helper may
        live in another file of the project: a test class's mixin (``self._test_merge_layers(...)``)."""
        ctx = self.ctx
        if asserts_on_results(ctx, func):
            return True
        return any(
            (callee := resolve_callee(ctx, call)) is not None
            and run_summary(Definition(*callee), "torch.asserts-on-results", _asserts_on_results, False)
            for call in self.ctx.calls
            if self.ctx.enclosing_function(call) is func
        )

    def _only_called_by_tests(self, func, depth: int) -> bool:
        if not call_graph(self.ctx).callers(func):
            return only_asserts(func)
        return self._no_caller_but_tests(func, depth)

    def _in_test_case(self, func) -> bool:
        cls = self.ctx.parent(func)
        return isinstance(cls, ast.ClassDef) and cls in self._test_case_classes

    @cached_property
    def _test_case_classes(self) -> frozenset:
        """Test case classes of this file: ``unittest.TestCase`` subclasses (through this file's
        classes), pytest classes (``class TestX:`` holding ``test_*`` methods that assert), and the
        mixins of this file they inherit their test methods from."""
        ctx = self.ctx
        found = set()
        for cls in ctx.nodes(ast.ClassDef):
            current, seen = cls, set()
            while current is not None and current.name not in seen:
                seen.add(current.name)
                if any((ctx.qualname(b) or dotted_name(b) or "").endswith("TestCase") for b in current.bases):
                    found.add(cls)
                    break
                current = local_base(ctx, current)
            if cls.name.startswith("Test") and any(
                isinstance(m, FUNCTION_TYPES) and m.name.startswith("test") and asserts(m) for m in cls.body
            ):
                found.add(cls)
        mixins = [
            ctx.classes[b.id] for cls in found for b in cls.bases if isinstance(b, ast.Name) and b.id in ctx.classes
        ]
        return frozenset(found | set(mixins))

    def _is_eval_loop(self, loop) -> bool:
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return False
        return bool(_expr_words(loop.iter) & EVAL_WORDS) and not iterations(self.ctx).trains_each_iteration(loop)

    def _called_from_training(self, func) -> bool:
        ctx = self.ctx
        for site in call_graph(ctx).callers(func):
            if any(iterations(self.ctx).trains_each_iteration(loop) for loop in ctx.enclosing_loops(site)):
                return True
        return False

    def _needs_grad(self, node) -> bool:
        """The unit backpropagates, or asks autograd for gradients (``torch.autograd.grad``,
        ``x.requires_grad_()``: gradients with respect to the input, for a saliency map or a loss on
        input gradients), or runs a model whose ``forward`` does (a model that predicts by gradient
        steps on its output): see ``autograd_use``."""
        if self.blocks.has_backward(node) or asks_for_gradients(self.ctx, node):
            return True
        return any(
            self.ctx.is_inside(call, node) and forward_needs_autograd(self.ctx, model_expression(call))
            for call in self.model_calls
        )


# ----- helpers ------------------------------------------------------------------------------------------------


def _asserts_on_results(helper: Definition) -> bool:
    return asserts_on_results(helper.ctx, helper.node)


def _through_batch_access(expr: ast.AST) -> ast.AST | None:
    """Look through what selects or moves part of a batch: ``batch["A"]``, ``x.to(device)``,
    ``x.type(Tensor)``, ``Variable(x)``."""
    if isinstance(expr, ast.Subscript):
        return expr.value
    if isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr in TENSOR_KEEPING_METHODS:
            return func.value
        if isinstance(func, ast.Name) and func.id == "Variable" and expr.args:
            return expr.args[0]
    return None


_WORD_SPLIT = re.compile(r"[^A-Za-z]+|(?<=[a-z])(?=[A-Z])")


def _words(name: str) -> set[str]:
    """``val_loader`` -> {val, loader}; ``evalLoader`` -> {eval, loader}."""
    return {w.lower() for w in _WORD_SPLIT.split(name) if w}


def _expr_words(expr: ast.AST) -> set[str]:
    """Words of the names, attributes and string keys in an iterable expression."""
    words: set[str] = set()
    for node in ast.walk(expr):
        if isinstance(node, ast.Name):
            words |= _words(node.id)
        elif isinstance(node, ast.Attribute):
            words |= _words(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 30:
            words |= _words(node.value)
    return words


def evaluation_analysis(ctx: FileContext) -> EvaluationAnalysis:
    return ctx.shared("evaluation", lambda: EvaluationAnalysis(ctx))
