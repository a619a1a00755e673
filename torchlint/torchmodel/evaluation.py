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

What reaches a unit is judged in its own function first (a ``model.eval()`` before
the model call that no ``model.train()`` undoes; a ``torch.no_grad()`` /
``inference_mode`` / ``set_grad_enabled(False)`` block or decorator around it),
then at every call site of the function in this file, a few calls deep. When a
function is called from nowhere in this file and receives its model from its
caller, the caller's mode is unknown and nothing is reported.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import call_graph, resolve_callee
from torchlint.analysis.context import FUNCTION_TYPES
from torchlint.analysis.imports import symbol
from torchlint.analysis.nodes import last_name, position
from torchlint.torchmodel.calls import call_events
from torchlint.torchmodel.events import MODE_KINDS, STEP_KINDS, EventKind
from torchlint.torchmodel.gradmode import grad_effect, lexical_grad_disabler
from torchlint.torchmodel.iterations import iterations
from torchlint.torchmodel.modules import module_classes
from torchlint.torchmodel.roles import Role, object_roles
from torchlint.torchmodel.walk import event_walker

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

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
_EVAL_HELPER = re.compile(r"(^|_)(set|to|switch|put|make)_?(to_)?eval(_mode)?$|^eval_mode$", re.I)
_EVAL_CONTEXT = re.compile(r"eval|inference_context|evaluating", re.I)
_GRAD_NEEDING_METHODS = frozenset({"backward", "requires_grad_", "retain_grad"})
_GRAD_NEEDING_FUNCTIONS = frozenset({"torch.autograd.grad", "torch.autograd.backward", "torch.enable_grad"})
_SET_GRAD = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled"})

REACHED, NOT_REACHED, UNKNOWN = True, False, None
_NOT_MODEL_HOLDER = re.compile(r"tokenizer|processor|config|feature_extractor|image_processor", re.I)
_MODEL_NAME = re.compile(
    r"^(?!(get|load|build|create|make|init|setup|save|to|from|is|has|named|set|update|wrap|unwrap|forward|call)_)"
    r"(([a-z]+_)?(model|net|network)s?(_(ema|ddp|without_ddp|eval|copy|g|d|a|b|\d+|engine|compiled|wrapped))?"
    r"|net[A-Z]\w*|([a-z]+_)?(backbone|encoder|decoder|classifier|generator|discriminator))$"
)


@dataclass(frozen=True)
class EvalUnit:
    node: ast.AST  # the function or the loop
    kind: str  # "function", "loop", "called-from-training"
    first_call: ast.Call  # the first model call in it, where TL005/TL006 report
    function: ast.AST | None  # the function holding the first call (None: module level)
    needs_grad: bool  # it runs a backward / autograd.grad (saliency, attacks): not a TL006 case

    @property
    def label(self) -> str:
        if isinstance(self.node, FUNCTION_TYPES):
            return f"`{self.node.name}()`"
        return f"the evaluation loop at line {self.node.lineno}"


@dataclass(frozen=True)
class Verdict:
    reached: bool | None
    site: ast.AST | None = None  # the call site where the mode was missing, when it was a caller's


class EvaluationAnalysis:
    MAX_CALL_DEPTH = 3

    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self.roles = object_roles(ctx)
        self.iterations = iterations(ctx)
        self.walker = event_walker(ctx)
        self._events: dict[ast.AST, list] = {}

    # ----- model calls --------------------------------------------------------------------------
    def is_model_call(self, call: ast.Call) -> bool:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "forward":
            func = func.value
        if not isinstance(func, (ast.Name, ast.Attribute, ast.Subscript)):
            return False
        if isinstance(func, ast.Name) and (
            func.id in self.ctx.classes or func.id in self.ctx.functions or func.id in self.ctx.imports.aliases
        ):
            return False
        key = symbol(func)
        if key is None:
            return False
        last = key.rsplit(".", 1)[-1].split("[", 1)[0]
        if _NOT_MODEL_HOLDER.search(last):
            return False  # `self.tokenizer(...)`: a from_pretrained object that is no network
        role = self.roles.role_of(func, hint=False)
        if role is not None:
            return role is Role.MODEL  # what the code shows the object is, whatever its name
        # Conventional names only when the whole last name says "model" (`self.model`, `net_g`,
        # `model_ema`, `models[i]`), not a method that mentions one (`load_model`, `named_modules`).
        return bool(_MODEL_NAME.match(last))

    @cached_property
    def model_calls(self) -> list[ast.Call]:
        """Model calls inside code that may be evaluation code (cheap spans first: most files have none)."""
        spans = self._candidate_spans
        if not spans:
            return []
        found = []
        for call in self.ctx.calls:
            if isinstance(call.func, (ast.Name, ast.Attribute, ast.Subscript)) and _within(call, spans):
                if self.is_model_call(call):
                    found.append(call)
        return found

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
        if self._may_train:
            graph = call_graph(ctx)
            with_loops = {ctx.enclosing_function(loop) for loop in ctx.nodes(ast.For, ast.AsyncFor, ast.While)}
            for func in with_loops - {None}:
                if graph.callers(func) and self._called_from_training(func):
                    spans.append((func.lineno, func.end_lineno or func.lineno))
        return spans

    @cached_property
    def _may_train(self) -> bool:
        """Cheap gate before the training-loop analysis: the file calls something like a backward or a step."""
        for call in self.ctx.calls:
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr in ("backward", "manual_backward", "step"):
                return True
        return False

    # ----- units ----------------------------------------------------------------------------------
    @cached_property
    def is_test_file(self) -> bool:
        path = self.ctx.path.replace("\\", "/")
        base = os.path.basename(path)
        return base.startswith("test_") or base.endswith("_test.py") or base == "conftest.py" or "/tests/" in path

    @cached_property
    def units(self) -> list[EvalUnit]:
        """Every evaluation unit of the file, the outermost one for each model call, in source order.
        Test suites are left out: their "evaluation" checks outputs, not metrics."""
        ctx = self.ctx
        seen: dict[ast.AST, EvalUnit] = {}
        if self.is_test_file:
            return []
        for call in self.model_calls:
            unit_node, kind = self._unit_of(call)
            if unit_node is None or unit_node in seen:
                continue
            if self._trains(unit_node):
                continue
            seen[unit_node] = EvalUnit(unit_node, kind, call, ctx.enclosing_function(call), self._needs_grad(unit_node))
        return sorted(seen.values(), key=lambda u: (u.first_call.lineno, u.first_call.col_offset))

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
            if self.is_eval_function(func) and not self._trains(func):  # not `train_and_evaluate()`
                return func, "function"
        if not functions or not self._is_excluded_function(functions[0]):
            for loop in reversed(loops):
                if self._is_eval_loop(loop):
                    return loop, "loop"
        if functions and loops and self._called_from_training(functions[0]) and not self._has_backward(functions[0]):
            return functions[0], "called-from-training"
        return None, ""

    def _is_module_like(self, cls: ast.ClassDef) -> bool:
        """A class of this file deriving from nn.Module, or any class defining `forward`
        (its base may live in another file: detectron2's meta-architectures)."""
        if cls.name in module_classes(self.ctx):
            return True
        return any(isinstance(stmt, FUNCTION_TYPES) and stmt.name == "forward" for stmt in cls.body)

    def _has_backward(self, func) -> bool:
        return any(e.kind is EventKind.BACKWARD for e in self._block_events(func))

    def is_eval_function(self, func) -> bool:
        if self._is_excluded_function(func):
            return False
        return bool(_words(func.name) & EVAL_WORDS)

    def _is_excluded_function(self, func) -> bool:
        name = func.name
        if _HOOK.search(name):
            return True
        return self.is_test_file and name.startswith("test")

    def _is_eval_loop(self, loop) -> bool:
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return False
        return bool(_expr_words(loop.iter) & EVAL_WORDS) and not self.iterations.trains_each_iteration(loop)

    def _called_from_training(self, func) -> bool:
        ctx = self.ctx
        for site in call_graph(ctx).callers(func):
            if any(self.iterations.trains_each_iteration(loop) for loop in ctx.enclosing_loops(site)):
                return True
        return False

    def _trains(self, node) -> bool:
        events = self._block_events(node)
        return any(e.kind in STEP_KINDS for e in events)

    def _block_events(self, node) -> list:
        if node not in self._events:
            if node is None:
                self._events[node] = self.walker.events(self.ctx.tree.body)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
                self._events[node] = self.iterations.iteration_events(node)
            else:
                self._events[node] = self.walker.events(node.body)
        return self._events[node]

    def _needs_grad(self, node) -> bool:
        if any(e.kind is EventKind.BACKWARD for e in self._block_events(node)):
            return True
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                func = sub.func
                if isinstance(func, ast.Attribute) and func.attr in _GRAD_NEEDING_METHODS:
                    return True
                if self.ctx.call_qualname(sub) in _GRAD_NEEDING_FUNCTIONS:
                    return True
        return False

    # ----- train/eval mode ----------------------------------------------------------------------------
    def eval_mode(self, unit: EvalUnit) -> Verdict:
        """Whether the model is in eval mode when the unit's first model call runs."""
        return self._mode_at(unit.first_call, unit.function, depth=0, seen=frozenset())

    def _mode_at(self, node, func, depth, seen) -> Verdict:
        local = self._local_mode(node, func)
        if local is not None:
            return Verdict(local)
        if func is None:
            return Verdict(REACHED if self._file_sets_eval_once() else NOT_REACHED)
        return self._from_callers(
            node, func, depth, seen, self._mode_at, self._file_sets_eval_once, self._disables_grad_itself
        )

    def _local_mode(self, node, func) -> bool | None:
        """True/False when a switch in ``func`` (before ``node``) or a context around ``node`` decides the mode."""
        pos = position(node)
        switches = [(position(e.site), e.kind) for e in self._block_events(func) if e.kind in MODE_KINDS]
        # `set_eval_mode(model)` imported from elsewhere: take its word for it.
        switches += [(position(call), EventKind.EVAL) for call in self._foreign_eval_helpers.get(func, ())]
        before = [kind for at, kind in sorted(switches, key=lambda item: item[0]) if at < pos]
        if before:
            return before[-1] is EventKind.EVAL
        for ancestor in self._ancestors_in(node, func):
            if isinstance(ancestor, (ast.With, ast.AsyncWith)):
                for item in ancestor.items:
                    if self._is_eval_context(item.context_expr):
                        return True
        for call in self._entered_contexts(func, pos):
            if self._is_eval_context(call):
                return True
        return None

    @cached_property
    def _foreign_eval_helpers(self) -> dict:
        """Function -> calls of helpers the linter cannot read (a library's) whose name says they switch
        a model to eval mode (`utils.set_eval(model)`, `switch_to_eval(net)`), given a model argument.
        A helper the project defines is read instead (its effects are events of the walk)."""
        found: dict = {}
        for call in self.ctx.calls:
            name = last_name(call.func)
            if not name or not _EVAL_HELPER.search(name) or resolve_callee(self.ctx, call) is not None:
                continue
            if any(self.roles.role_of(arg) == Role.MODEL for arg in call.args if symbol(arg)):
                found.setdefault(self.ctx.enclosing_function(call), []).append(call)
        return found

    def _is_eval_context(self, expr) -> bool:
        if not isinstance(expr, ast.Call):
            return False
        qual = self.ctx.call_qualname(expr) or ""
        if qual.startswith("torch."):
            return False  # torch.inference_mode() disables autograd, not dropout/batch-norm updates
        name = last_name(expr.func)
        return bool(name and _EVAL_CONTEXT.search(name))

    def _file_sets_eval_once(self) -> bool:
        """An inference script: models are put in eval mode somewhere (or loaded with
        `from_pretrained`, which returns them in eval mode) and never back in train mode."""
        kinds = {e.kind for e in self.mode_switches}
        if EventKind.TRAIN in kinds or self._may_train:
            return False  # a file that trains: its models start (and return) in training mode
        return EventKind.EVAL in kinds or any(
            isinstance(call.func, ast.Attribute) and call.func.attr == "from_pretrained" for call in self.ctx.calls
        )

    @cached_property
    def mode_switches(self) -> list:
        """Every `.eval()`, `.train()`, `.train(False)` call of the file, as events."""
        found = []
        for call in self.ctx.calls:
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr in ("eval", "train"):
                event = call_events(self.ctx).classify(call)
                if event is not None and event.kind in MODE_KINDS:
                    found.append(event)
        return found

    # ----- autograd mode --------------------------------------------------------------------------------
    def no_grad(self, unit: EvalUnit) -> Verdict:
        """Whether autograd is off when the unit's first model call runs."""
        return self._grad_at(unit.first_call, unit.function, depth=0, seen=frozenset())

    def _grad_at(self, node, func, depth, seen) -> Verdict:
        if lexical_grad_disabler(self.ctx, node) is not None:
            return Verdict(REACHED)
        if self._enabled_around(node, func):
            return Verdict(NOT_REACHED)
        pos = position(node)
        for call in self._entered_contexts(func, pos):
            if grad_effect(self.ctx, call) is False:
                return Verdict(REACHED)
        if self._global_grad_off(func, pos):
            return Verdict(REACHED)
        if func is None:
            return Verdict(NOT_REACHED)
        return self._from_callers(
            node, func, depth, seen, self._grad_at, lambda: self._global_grad_off(None, None), self._sets_eval_itself
        )

    def _enabled_around(self, node, func) -> bool:
        for ancestor in self._ancestors_in(node, func):
            if isinstance(ancestor, (ast.With, ast.AsyncWith)):
                if any(grad_effect(self.ctx, item.context_expr) is True for item in ancestor.items):
                    return True
        return False

    def _global_grad_off(self, func, pos) -> bool:
        """A bare `torch.set_grad_enabled(False)` statement before ``pos`` in ``func`` (or at module level)."""
        for stmt_call in self._set_grad_calls:
            if grad_effect(self.ctx, stmt_call) is not False:
                continue
            owner = self.ctx.enclosing_function(stmt_call)
            if owner is None or (owner is func and pos is not None and position(stmt_call) < pos):
                return True
        return False

    @cached_property
    def _set_grad_calls(self) -> list[ast.Call]:
        return [
            c
            for c in self.ctx.calls
            if isinstance(self.ctx.parent(c), ast.Expr) and self.ctx.call_qualname(c) in _SET_GRAD
        ]

    # ----- shared: callers, contexts --------------------------------------------------------------------------
    def _from_callers(self, node, func, depth, seen, check, fallback, self_contained) -> Verdict:
        """Judge ``func`` by every call site of it; ``node`` is the model call or call site inside it.

        With no call site in this file: a function handed its model by its caller is not judged
        (the caller owns the model and its modes), unless it is evidently self-contained
        evaluation code: it sets the *other* mode itself (``model.eval()`` but no no-grad)."""
        sites = call_graph(self.ctx).callers(func)
        if not sites and func.name in self._names_used_as_values:
            return Verdict(UNKNOWN)  # handed to something else as a callback (`evaluator(eval_fn)`)
        if not sites or depth >= self.MAX_CALL_DEPTH or func in seen:
            if depth > 0 and self._has_backward(func):
                # A caller that trains: it runs in train mode with autograd on (a backward under
                # no-grad would fail), so whoever calls it cannot have switched either off.
                return Verdict(NOT_REACHED)
            if self._model_from_caller(node, func) and not (depth == 0 and self_contained(func)):
                return Verdict(UNKNOWN)
            if depth == 0 and self._switched_elsewhere_in_class(node, func):
                return Verdict(UNKNOWN)  # `fit()` ends with `self.model.eval()`; `predict()` relies on it
            return Verdict(REACHED if fallback() else NOT_REACHED)
        unknown = False
        for site in sites:
            verdict = check(site, self.ctx.enclosing_function(site), depth + 1, seen | {func})
            if verdict.reached is NOT_REACHED:
                return Verdict(NOT_REACHED, site)  # the direct call site: the one to fix
            if verdict.reached is UNKNOWN:
                unknown = True
        return Verdict(UNKNOWN if unknown else REACHED)

    @cached_property
    def _names_used_as_values(self) -> frozenset[str]:
        """Names read other than as the callee of a call (functions passed as callbacks)."""
        ctx = self.ctx
        used = set()
        for name in ctx.nodes(ast.Name):
            if isinstance(name.ctx, ast.Load) and name.id in ctx.functions:
                parent = ctx.parent(name)
                if not (isinstance(parent, ast.Call) and parent.func is name):
                    used.add(name.id)
        for attr in ctx.nodes(ast.Attribute):
            if attr.attr in ctx.functions:
                parent = ctx.parent(attr)
                if not (isinstance(parent, ast.Call) and parent.func is attr):
                    used.add(attr.attr)
        return frozenset(used)

    def _switched_elsewhere_in_class(self, node, func) -> bool:
        """A method using `self.<model>` whose class switches that model's mode in another method."""
        if not (self.is_model_call(node) and _root_name(node.func) == "self"):
            return False
        cls = self.ctx.parent(func)
        if not isinstance(cls, ast.ClassDef):
            return False
        model = symbol(
            node.func.value if isinstance(node.func, ast.Attribute) and node.func.attr == "forward" else node.func
        )
        return any(
            event.kind is EventKind.EVAL
            and same_model(event.target, model)
            and self.ctx.enclosing_function(event.node) is not func
            and self.ctx.is_inside(event.node, cls)
            for event in self.mode_switches
        )

    def _sets_eval_itself(self, func) -> bool:
        return any(e.kind is EventKind.EVAL and not e.via for e in self._block_events(func))

    def _disables_grad_itself(self, func) -> bool:
        if any(grad_effect(self.ctx, d) is False for d in func.decorator_list):
            return True
        return any(
            grad_effect(self.ctx, item.context_expr) is False
            for with_node in self._withs_by_function.get(func, ())
            for item in with_node.items
        )

    @cached_property
    def _withs_by_function(self) -> dict:
        by_function: dict = {}
        for node in self.ctx.nodes(ast.With, ast.AsyncWith):
            by_function.setdefault(self.ctx.enclosing_function(node), []).append(node)
        return by_function

    def _model_from_caller(self, node, func) -> bool:
        """Whether the model used at ``node`` (a model call, or a call site handing a model on) is a
        parameter of ``func`` or an attribute of ``self``: then ``func``'s caller decides its mode."""
        if self.is_model_call(node):
            func_expr = node.func
            if isinstance(func_expr, ast.Attribute) and func_expr.attr == "forward":
                func_expr = func_expr.value
            exprs = [func_expr]
        else:
            exprs = [
                a for a in list(node.args) + [k.value for k in node.keywords] if self.roles.role_of(a) == Role.MODEL
            ]
        owners = _params(func) | {"self"}
        return any(_root_name(e) in owners for e in exprs)

    def _ancestors_in(self, node, func):
        for ancestor in self.ctx.ancestors(node):
            if ancestor is func or isinstance(ancestor, (ast.ClassDef, ast.Lambda)):
                return
            yield ancestor

    def _entered_contexts(self, func, pos) -> list[ast.AST]:
        """Context managers entered with `stack.enter_context(cm)` in ``func`` before ``pos``."""
        found = []
        for call in self._enter_context_calls.get(func, ()):
            if position(call) < pos and call.args:
                found.append(call.args[0])
        return found

    @cached_property
    def _enter_context_calls(self) -> dict[ast.AST | None, list[ast.Call]]:
        by_function: dict = {}
        for call in self.ctx.calls:
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr == "enter_context":
                by_function.setdefault(self.ctx.enclosing_function(call), []).append(call)
        return by_function


# ----- helpers ------------------------------------------------------------------------------------------------


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


def _norm(target: str | None) -> str | None:
    if target is None:
        return None
    parts = [p for p in target.split(".") if p not in ("self", "module", "_orig_mod")]
    return ".".join(parts)


def same_model(a: str | None, b: str | None) -> bool:
    """Whether two model symbols may name the same model (`self.model`, `model.module`, `model`;
    a sub-module and its parent); unknown symbols match anything."""
    if a is None or b is None:
        return True
    a, b = _norm(a), _norm(b)
    return a == b or a.startswith(b + ".") or b.startswith(a + ".") or not a or not b


def _within(node, spans) -> bool:
    line = node.lineno
    return any(start <= line <= end for start, end in spans)


def _params(func) -> set[str]:
    args = func.args
    params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    if args.vararg:
        params.add(args.vararg.arg)
    if args.kwarg:
        params.add(args.kwarg.arg)
    return params


def _root_name(expr) -> str | None:
    while isinstance(expr, (ast.Attribute, ast.Subscript, ast.Call)):
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return expr.id if isinstance(expr, ast.Name) else None


def evaluation_analysis(ctx: FileContext) -> EvaluationAnalysis:
    return ctx.shared("evaluation", lambda: EvaluationAnalysis(ctx))
