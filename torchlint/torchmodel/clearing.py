"""Clearing: does a gradient clear hit the gradients an optimizer step applies?

``clearing(ctx).clears(clear, step, stepped, strict=False)``, with ``stepped`` =
``stepped_optimizers(unit)`` (the optimizers stepped in the same iteration). Per optimizer:
the same symbol (after ``canonical_target``, which undoes ``opt = self.opt`` copies and maps a
helper's parameter to the caller's argument, and reads ``opt.optimizer`` of an optimizer wrapper
as ``opt``), ``model.zero_grad()`` on a model the optimizer
was built from, another optimizer only if they share parameters. Not strict, whatever cannot
be told apart counts as clearing.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import call_graph, resolve_local_call
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.imports import symbol
from torchlint.analysis.unpacking import call_argument
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.events import Event, EventKind
from torchlint.torchmodel.modules import module_classes
from torchlint.torchmodel.roles import Role, object_roles
from torchlint.torchmodel.walk import MAX_INLINE_DEPTH

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext
    from torchlint.torchmodel.iterations import Unit


class Clearing:
    """Which clears reach which steps in one file; get the shared instance with ``clearing(ctx)``."""

    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self.roles = object_roles(ctx)

    def canonical_target(self, event: Event) -> str | None:
        """The event's target with local copies undone (``opt = self.opt; opt.step()`` -> ``self.opt``)
        and a wrapper's ``.optimizer`` read as the wrapper (``opt.optimizer`` -> ``opt``)."""
        target = event.target
        if target is None:
            return None
        at, via = event.node, event.via
        for _ in range(MAX_INLINE_DEPTH + 1):
            scope = self.ctx.enclosing_scope(at)
            head, _, rest = target.partition(".")
            copy_at = at
            for _ in range(3):
                copy = self._copy_of(head, copy_at)
                if copy is None:
                    break
                target = copy[0] + ("." + rest if rest else "")
                copy_at = copy[1]
                head, _, rest = target.partition(".")
            target = self._unwrapped(target, copy_at)
            # A parameter of a helper reached through a call: the caller's argument (closure(opt_1)).
            if not (
                via
                and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef))
                and resolve_local_call(self.ctx, via[-1]) is scope
            ):
                break
            arg = call_argument(self.ctx, via[-1], scope, head)
            key = symbol(arg) if arg is not None else None
            if key is None:
                break
            target = key + ("." + rest if rest else "")
            at, via = via[-1], via[:-1]
        return target

    def _unwrapped(self, target: str, at: ast.AST) -> str:
        """``opt.optimizer`` -> ``opt`` where ``opt`` holds an optimizer wrapper (Lightning's
        ``opt = self.optimizers()``): the wrapper steps and clears the optimizer it wraps, so
        ``opt.optimizer.zero_grad()`` clears what ``opt.step()`` applies."""
        head, _, attr = target.rpartition(".")
        if attr == torch_names.WRAPPED_OPTIMIZER_ATTRIBUTE and head and "." not in head:
            if holds_optimizer_wrapper(self.ctx, head, at):
                return head
        return target

    def _copy_of(self, name: str, at: ast.AST) -> tuple[str, ast.AST] | None:
        """``(symbol, statement)`` when every assignment of ``name`` that reaches ``at`` copies the
        same other object (``optimizer = self.optimizer``); None otherwise."""
        copied = set()
        bindings = dataflow(self.ctx).reaching(name, at)
        for binding in bindings:
            value = binding.value
            if binding.kind != "assign" or not isinstance(value, (ast.Name, ast.Attribute)):
                return None
            copied.add(symbol(value))
        if len(copied) != 1 or None in copied or name in copied:
            return None
        return copied.pop(), bindings[0].stmt

    def stepped_optimizers(self, unit: Unit) -> frozenset:
        return frozenset(self.canonical_target(unit.events[i]) for i in unit.steps)

    def clears(self, clear: Event, step: Event, stepped: frozenset, strict: bool = False) -> bool:
        """Whether the clearing event ``clear`` clears the gradients ``step`` applies.

        ``stepped`` holds the (canonical) optimizers stepped in the same iteration. Not
        strict (TL001: "is this optimizer ever cleared?"), anything that cannot be told
        apart counts as clearing. Strict (TL002: "does this clear wipe what the step is
        about to apply?"), only a clear that surely hits the step's optimizer counts.
        """
        if clear.kind is EventKind.CLEAR_GRAD:
            return not strict
        opt = self.canonical_target(step)
        target = self.canonical_target(clear)
        if target is None or opt is None or _loop_variable(clear):
            return not strict or (opt is not None and len(stepped) == 1)
        if target == opt or _last(target) == _last(opt):
            return True
        optimizer_models = self.roles.optimizer_models
        if self._is_model_target(target, clear.node):
            models = optimizer_models.get(opt) or optimizer_models.get(step.target or "")
            if models:
                if any(same_module(target, m) for m in models):
                    return True
                # A parameter holds whatever the callers hand it (`train(model, ...)` called with
                # the optimizer's own model): not strict, it counts unless every call of the file
                # hands it another model.
                return not strict and self._parameter_may_hold(target, clear.node, models)
            return not strict or len(stepped) == 1
        if self.roles.role_of(target) == Role.OPTIMIZER:
            if len(stepped) == 1:
                return True
            # Another optimizer clears this one's gradients only if they are known to share
            # parameters: two optimizers almost always split the parameters (a GAN's pair).
            mine, theirs = optimizer_models.get(opt), optimizer_models.get(target)
            if mine and theirs:
                return any(same_module(a, b) for a in mine for b in theirs)
            return False
        return not strict

    def _parameter_may_hold(self, target: str, node: ast.AST, models) -> bool:
        """``target``'s head, where ``node`` is written, holds only a parameter of the enclosing
        function, and the calls of the function in this file (if any) hand it one of ``models``."""
        head, dot, rest = target.partition(".")
        bindings = dataflow(self.ctx).reaching(head, node)
        if not bindings or any(binding.kind != "param" for binding in bindings):
            return False
        function = self.ctx.enclosing_function(node)
        if function is None:
            return False
        sites = call_graph(self.ctx).callers(function)
        if not sites:
            # Uncalled: the parameter may be the optimizer's model only when that model lives
            # outside the function (a global the script built); one the function itself holds
            # under another name (`train_gan(netG, netD)`) is another object.
            return not any(self._bound_in(model.partition(".")[0], node, function) for model in models)
        passed = (call_argument(self.ctx, site, function, head) for site in sites)
        return any(
            arg is not None
            and (key := symbol(arg)) is not None
            and any(same_module(key + dot + rest, m) for m in models)
            for arg in passed
        )

    def _bound_in(self, name: str, node: ast.AST, function: ast.AST) -> bool:
        """Some binding of ``name`` that reaches ``node`` belongs to ``function`` (a parameter or a
        local of it)."""
        return any(self.ctx.is_inside(binding.stmt, function) for binding in dataflow(self.ctx).reaching(name, node))

    def _is_model_target(self, target: str, node: ast.AST) -> bool:
        if self.roles.role_of(target) == Role.MODEL or any(
            target in models for models in self.roles.optimizer_models.values()
        ):
            return True
        if target == "self":
            cls = self.ctx.enclosing(node, ast.ClassDef)
            return cls is not None and cls.name in module_classes(self.ctx)
        return False


def holds_optimizer_wrapper(ctx: FileContext, name: str, at: ast.AST, depth: int = 3) -> bool:
    """Every value of ``name`` that reaches ``at`` comes from a call that returns optimizer
    wrappers (``self.optimizers()`` in a module class, ``accelerator.prepare(...)``), directly,
    indexed or unpacked (``opt_g, opt_d = self.optimizers()``, ``opt = optimizers[0]``)."""
    bindings = dataflow(ctx).reaching(name, at)
    if not bindings:
        return False
    for binding in bindings:
        if binding.kind == "unpack":
            source = binding.source
        elif binding.kind == "assign":
            source = binding.value
        else:
            return False
        while isinstance(source, ast.Subscript):
            source = source.value
        if isinstance(source, ast.Name) and depth > 0:
            if not holds_optimizer_wrapper(ctx, source.id, binding.stmt, depth - 1):
                return False
        elif not (isinstance(source, ast.Call) and _returns_optimizer_wrappers(ctx, source)):
            return False
    return True


def _returns_optimizer_wrappers(ctx: FileContext, call: ast.Call) -> bool:
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in torch_names.OPTIMIZER_WRAPPING_METHODS:
        return True
    if func.attr == torch_names.LIGHTNING_OPTIMIZERS_METHOD and isinstance(func.value, ast.Name):
        # `self.optimizers()` of a LightningModule: a module class, or a class that inherits the
        # method from a base of another file the linter may not reach (a project's own base module).
        cls = ctx.enclosing(call, ast.ClassDef)
        if func.value.id != "self" or cls is None:
            return False
        return cls.name in module_classes(ctx) or (
            bool(cls.bases) and not any(isinstance(s, ast.FunctionDef) and s.name == func.attr for s in cls.body)
        )
    return False


def _loop_variable(event: Event) -> bool:
    """Whether the event's target is the variable of a loop around it (``for opt in opts: opt.zero_grad()``)."""
    for loop in event.loops:
        if isinstance(loop, (ast.For, ast.AsyncFor)) and event.target and symbol(loop.target) == event.target:
            return True
    return False


def _last(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def same_module(a: str, b: str) -> bool:
    """``model``/``self.model`` name one module; ``model.module`` (the DDP-wrapped one) and
    ``model.head`` are inside it, so clearing either side reaches the other's parameters."""
    if a == b or _last(a) == _last(b):
        return True
    a_parts, b_parts = a.split("."), b.split(".")
    for shorter, longer in ((a_parts, b_parts), (b_parts, a_parts)):
        for start in range(len(longer) - len(shorter) + 1):
            if longer[start : start + len(shorter)] == shorter:
                return True
    return False


def clearing(ctx: FileContext) -> Clearing:
    return ctx.shared("clearing", lambda: Clearing(ctx))
