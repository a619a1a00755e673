"""Which train/eval mode and which autograd mode reach a point of evaluation code.

A mode is judged in the code's own function first (a ``model.eval()`` before the point that no
``model.train()`` undoes; a ``torch.no_grad()`` / ``inference_mode`` / ``set_grad_enabled(False)``
block or decorator around it), then at every call site of the function in this file, a few calls
deep (``CallerChain``). When a function is called from nowhere in this file and receives its model
from its caller, the caller's mode is unknown and the verdict is UNKNOWN.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import call_graph
from torchlint.analysis.conditions import never_runs
from torchlint.analysis.dataflow import dataflow, instance_method_calls
from torchlint.analysis.imports import symbol
from torchlint.analysis.nodes import last_name, position, self_attribute_name
from torchlint.torchmodel.events import MODE_KINDS, STEP_KINDS, EventKind
from torchlint.torchmodel.forward_calls import mode_switches, model_expression, same_model
from torchlint.torchmodel.gradmode import (
    called_elsewhere_without_grad,
    grad_effect,
    grad_mode_statements,
    instances_used_without_grad,
    lexical_grad_disabler,
    lexical_undecided_switch,
    lexical_unknown_switch,
    restores_grad_mode,
    statement_effect,
)
from torchlint.torchmodel.iterations import iterations
from torchlint.torchmodel.phases import runs_when_called
from torchlint.torchmodel.roles import Role, object_roles
from torchlint.torchmodel.run_time_switches import may_switch_to_eval_by_name
from torchlint.torchmodel.target_version import volatile_in_old_code
from torchlint.torchmodel.torch_versions import volatile_only_on_old_torch
from torchlint.torchmodel.training_flag_guards import flag_false_on_path, is_training_flag
from torchlint.torchmodel.training_steps import backpropagated_calls, backpropagated_list_elements
from torchlint.torchmodel.walk import event_walker

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext
    from torchlint.torchmodel.forward_calls import ForwardCalls

REACHED, NOT_REACHED, UNKNOWN = True, False, None

_EVAL_HELPER = re.compile(r"(^|_)(set|to|switch|put|make)_?(to_)?eval(_mode)?$|^eval_mode$", re.I)
_EVAL_CONTEXT = re.compile(r"eval|inference_context|evaluating", re.I)


@dataclass(frozen=True)
class Verdict:
    reached: bool | None
    site: ast.AST | None = None  # the call site where the mode was missing, when it was a caller's


class BlockEvents:
    """Training events of one execution of a function, loop or the module, cached per block."""

    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self._events: dict[ast.AST, list] = {}

    def of(self, node) -> list:
        if node not in self._events:
            if node is None:
                self._events[node] = event_walker(self.ctx).events(self.ctx.tree.body)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
                self._events[node] = iterations(self.ctx).iteration_events(node)
            else:  # a function or compound statement; a simple statement (an evaluation batch) is its own body
                self._events[node] = event_walker(self.ctx).events(getattr(node, "body", [node]))
        return self._events[node]

    def trains(self, node) -> bool:
        return any(e.kind in STEP_KINDS for e in self.of(node))

    def has_backward(self, func) -> bool:
        return any(e.kind is EventKind.BACKWARD for e in self.of(func))

    def sets_eval_itself(self, func) -> bool:
        return any(e.kind is EventKind.EVAL and not e.via for e in self.of(func))

    @cached_property
    def may_train(self) -> bool:
        """Cheap gate before the training-loop analysis: the file calls something like a backward or a step."""
        for call in self.ctx.calls:
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr in ("backward", "manual_backward", "step"):
                return True
        return False


class CallerChain:
    """Judges a function by the call sites of it in this file, when its own body does not decide."""

    MAX_CALL_DEPTH = 3

    def __init__(self, ctx: FileContext, forward: ForwardCalls, blocks: BlockEvents, provenance):
        self.ctx = ctx
        self.forward = forward
        self.blocks = blocks
        self.provenance = provenance

    def judge(self, node, func, depth, seen, check, fallback, self_contained) -> Verdict:
        """Judge ``func`` by every call site of it; ``node`` is the model call or call site inside it.

        With no call site in this file: a function handed its model by its caller is not judged
        (the caller owns the model and its modes), unless it is evidently self-contained
        evaluation code: it sets the *other* mode itself (``model.eval()`` but no no-grad)."""
        graph = call_graph(self.ctx)
        sites = graph.callers(func)
        if sites:  # a method also called on an instance (`Evaluator(t).evaluate()`) is judged there too
            sites = sorted([*sites, *instance_method_calls(self.ctx, func)], key=position)
        if not sites and func.name in self._names_used_as_values:
            return Verdict(UNKNOWN)  # handed to something else as a callback (`evaluator(eval_fn)`)
        if not sites and graph.called_only_where_dead(func):
            return Verdict(REACHED)  # called only after an `exit()`/`return`: no path runs it (as below)
        if not sites or depth >= self.MAX_CALL_DEPTH or func in seen:
            if depth > 0 and self.blocks.has_backward(func):
                # A caller that trains: it runs in train mode with autograd on (a backward under
                # no-grad would fail), so whoever calls it cannot have switched either off.
                return Verdict(NOT_REACHED)
            if self._model_from_caller(node, func) and not (depth == 0 and self_contained(func)):
                return Verdict(UNKNOWN)
            if depth == 0 and self._switched_elsewhere_in_class(node, func):
                return Verdict(UNKNOWN)  # `fit()` ends with `self.model.eval()`; `predict()` relies on it
            return Verdict(REACHED if fallback() else NOT_REACHED)
        # A call site whose constant arguments select another branch (`infer(model, framework="tf")`
        # for `model(**x) if framework == "pt" else ...`) never runs ``node``, nor does one under a
        # branch the file's constants rule out (`if SAVE_IMAGES and ...:` with `SAVE_IMAGES = False`
        # bound once): neither is a path to judge.
        sites = [
            site for site in sites if runs_when_called(self.ctx, site, func, node) and not never_runs(self.ctx, site)
        ]
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
        """A method using `self.<model>` whose class switches that model's mode in another method
        (also through a name built at run time, in a method the class runs: ``run_time_switches``)."""
        if not (self.forward.is_model_call(node) and _root_name(node.func) == "self"):
            return False
        cls = self.ctx.parent(func)
        if not isinstance(cls, ast.ClassDef):
            return False
        expr = model_expression(node)
        attribute = self_attribute_name(expr)
        if attribute is not None and may_switch_to_eval_by_name(self.ctx, cls, attribute):
            return True  # `net = getattr(self, "net_" + name); net.eval()` in a method the class runs
        model = symbol(expr)
        return any(
            event.kind is EventKind.EVAL
            and same_model(event.target, model)
            and self.ctx.enclosing_function(event.node) is not func
            and self.ctx.is_inside(event.node, cls)
            for event in mode_switches(self.ctx)
        )

    def _model_from_caller(self, node, func) -> bool:
        """Whether the model used at ``node`` (a model call, or a call site handing a model on) is a
        parameter of ``func`` or an attribute of ``self``, or taken from one (``net = models[0]``,
        ``net = nets.coarse``): then ``func``'s caller decides its mode."""
        if self.forward.is_model_call(node):
            exprs = [model_expression(node)]
        else:
            exprs = [
                a
                for a in list(node.args) + [k.value for k in node.keywords]
                if object_roles(self.ctx).role_of(a) == Role.MODEL
            ]
        owners = _params(func) | {"self"}
        flow = dataflow(self.ctx)
        return any(_root_name(o) in owners for e in exprs for o in [e, *flow.origins(e)] if o is not None)

    def ancestors_in(self, node, func):
        for ancestor in self.ctx.ancestors(node):
            if ancestor is func or isinstance(ancestor, (ast.ClassDef, ast.Lambda)):
                return
            yield ancestor

    def entered_contexts(self, func, pos) -> list[ast.AST]:
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


class TrainEvalMode:
    """Whether the model is in eval mode where evaluation code runs it."""

    def __init__(self, ctx: FileContext, chain: CallerChain, autograd: AutogradMode):
        self.ctx = ctx
        self.chain = chain
        self.blocks = chain.blocks
        self.autograd = autograd

    def at(self, node, func, depth=0, seen=frozenset()) -> Verdict:
        local = self._local_mode(node, func)
        if local is not None:
            return Verdict(local)
        if depth == 0:
            loaded = self.chain.provenance.loader_mode(node)
            if loaded is not None:  # `from_pretrained` returns eval mode; a hub entry point is opaque
                return Verdict(REACHED if loaded == "eval" else UNKNOWN)
        elif self._hands_on_eval_loaded(node):
            return Verdict(REACHED)  # a call site handing on models that start, and stay, in eval mode
        if func is None:
            return Verdict(REACHED if self._file_sets_eval_once() else NOT_REACHED)
        return self.chain.judge(
            node, func, depth, seen, self.at, self._file_sets_eval_once, self.autograd.disabled_by_itself
        )

    def _hands_on_eval_loaded(self, site) -> bool:
        """Every model the call site hands on was loaded in eval mode and nothing switches it to
        train mode (``provenance.loaded_in_eval_mode``)."""
        if not isinstance(site, ast.Call):
            return False
        roles = object_roles(self.ctx)
        handed = [a for a in [*site.args, *(k.value for k in site.keywords)] if roles.role_of(a) == Role.MODEL]
        return bool(handed) and all(self.chain.provenance.loaded_in_eval_mode(a) for a in handed)

    def _local_mode(self, node, func) -> bool | None:
        """True/False when a switch in ``func`` (before ``node``) or a context around ``node`` decides the mode."""
        pos = position(node)
        switches = [(position(e.site), e.kind) for e in self.blocks.of(func) if e.kind in MODE_KINDS]
        # `set_eval_mode(model)` imported from elsewhere: take its word for it.
        switches += [(position(call), EventKind.EVAL) for call in self._foreign_eval_helpers.get(func, ())]
        before = [kind for at, kind in sorted(switches, key=lambda item: item[0]) if at < pos]
        if before:
            return before[-1] is EventKind.EVAL
        for ancestor in self.chain.ancestors_in(node, func):
            if isinstance(ancestor, (ast.With, ast.AsyncWith)):
                for item in ancestor.items:
                    if self._is_eval_context(item.context_expr):
                        return True
        for call in self.chain.entered_contexts(func, pos):
            if self._is_eval_context(call):
                return True
        return None

    @cached_property
    def _foreign_eval_helpers(self) -> dict:
        """Function -> calls of helpers defined in other files whose name says they switch a model
        to eval mode (`utils.set_eval(model)`, `switch_to_eval(net)`), given a model argument."""
        found: dict = {}
        graph = call_graph(self.ctx)
        for call in self.ctx.calls:
            name = last_name(call.func)
            if not name or not _EVAL_HELPER.search(name) or graph.callee(call) is not None:
                continue
            if any(object_roles(self.ctx).role_of(arg) == Role.MODEL for arg in call.args if symbol(arg)):
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
        kinds = {e.kind for e in mode_switches(self.ctx)}
        if EventKind.TRAIN in kinds or self.blocks.may_train:
            return False  # a file that trains: its models start (and return) in training mode
        return EventKind.EVAL in kinds or any(
            isinstance(call.func, ast.Attribute) and call.func.attr == "from_pretrained" for call in self.ctx.calls
        )


class AutogradMode:
    """Whether autograd is off where evaluation code runs the model."""

    def __init__(self, ctx: FileContext, chain: CallerChain):
        self.ctx = ctx
        self.chain = chain
        self.blocks = chain.blocks

    def at(self, node, func, depth=0, seen=frozenset(), model_call=None) -> Verdict:
        """``model_call``: the call being judged, when ``node`` is a call site on the path into it."""
        model_call = node if depth == 0 else model_call
        if lexical_grad_disabler(self.ctx, node) is not None:
            return Verdict(REACHED)
        if model_call is not None and volatile_only_on_old_torch(self.ctx, model_call, node):
            return Verdict(REACHED)  # `Variable(x, volatile=True)` in a branch for PyTorch < 0.4
        if depth == 0 and volatile_in_old_code(self.ctx, node):
            return Verdict(REACHED)  # `Variable(x, volatile=True)` in a file written for PyTorch < 1.0
        if lexical_unknown_switch(self.ctx, node) is not None:
            return Verdict(UNKNOWN)  # shown, else silent: it may switch autograd off
        if (depth > 0 and node in backpropagated_calls(self.ctx)) or node in backpropagated_list_elements(self.ctx):
            # A call site whose result is backpropagated, or a model call whose result goes into a
            # list summed into a backpropagated loss: this path trains, autograd is needed on it. It
            # evaluates nothing, so it counts with the paths that are fine. (A model call's own
            # result reaching a loss only "may": a script's later section reuses its names.)
            return Verdict(REACHED)
        flag = lexical_undecided_switch(self.ctx, node)
        if flag is not None and is_training_flag(flag):
            return self._tied_to_mode(flag, func)
        if self._enabled_around(node, func):
            return Verdict(NOT_REACHED)
        pos = position(node)
        for call in self.chain.entered_contexts(func, pos):
            if grad_effect(self.ctx, call) is False:
                return Verdict(REACHED)
        if self._global_grad_off(func, pos):
            return Verdict(REACHED)
        if depth == 0 and self.chain.provenance.loader_mode(node) == "opaque":
            return Verdict(UNKNOWN)  # a hub entry point's object may run its forward under no-grad itself
        if func is None:
            return Verdict(NOT_REACHED)
        if not call_graph(self.ctx).callers(func) and called_elsewhere_without_grad(self.ctx, func):
            return Verdict(REACHED)  # every caller, in other files, runs it under no-grad
        if instances_used_without_grad(self.ctx, func):
            return Verdict(REACHED)  # a method of objects built and used only under no-grad elsewhere
        return self.chain.judge(
            node,
            func,
            depth,
            seen,
            lambda site, caller, deeper, visited: self.at(site, caller, deeper, visited, model_call),
            lambda: self._global_grad_off(None, None),
            self.blocks.sets_eval_itself,
        )

    def _tied_to_mode(self, flag, func) -> Verdict:
        """Under ``with torch.set_grad_enabled(self.model.training):`` autograd is off exactly where
        the model is in eval mode: shown so before the switch in ``func``, or on every path into it
        (a call on the same object after a switch to eval, a call whose result is backpropagated,
        which trains). A path that shows neither leaves the mode unknown."""
        ctx = self.ctx
        if flag_false_on_path(ctx, flag):
            return Verdict(REACHED)
        sites = [*call_graph(ctx).callers(func), *instance_method_calls(ctx, func)] if func is not None else []
        training = backpropagated_calls(ctx)
        if sites and all(site in training or flag_false_on_path(ctx, flag, (site,)) for site in sites):
            return Verdict(REACHED)
        return Verdict(UNKNOWN)

    def disabled_by_itself(self, func) -> bool:
        """The function switches autograd off itself (a decorator, or a `with` block in it)."""
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

    def _enabled_around(self, node, func) -> bool:
        for ancestor in self.chain.ancestors_in(node, func):
            if isinstance(ancestor, (ast.With, ast.AsyncWith)):
                if any(grad_effect(self.ctx, item.context_expr) is True for item in ancestor.items):
                    return True
        return False

    def _global_grad_off(self, func, pos) -> bool:
        """A bare grad statement switching autograd off (``torch.set_grad_enabled(False)``,
        ``torch.no_grad().__enter__()``) at module level, or the last one in ``func`` before ``pos``."""
        latest = None
        for stmt_call in grad_mode_statements(self.ctx):
            effect = statement_effect(self.ctx, stmt_call)
            owner = self.ctx.enclosing_function(stmt_call)
            if owner is None and effect is False:
                return True
            if owner is not func or pos is None or position(stmt_call) >= pos:
                continue
            if effect is not None or restores_grad_mode(self.ctx, stmt_call):
                if latest is None or position(stmt_call) > position(latest):
                    latest = stmt_call
        return latest is not None and statement_effect(self.ctx, latest) is False


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
