"""A model of training code, shared by the rules that reason about training steps.

Built lazily, once per file, as ``training_model(ctx)`` (a ``TrainingModel``). What it answers:

Roles -- who holds what
    ``roles`` (symbol -> role), ``role_of(expr_or_symbol)``, ``expr_role(expr)``,
    ``constructor_role(call)``: ``OPTIMIZER``, ``SCHEDULER``, ``SCALER``, ``MODEL``,
    ``CRITERION``, from constructor calls, ``accelerator.prepare``-style unpacking,
    wrappers (``DDP(model)``, ``model.cuda()``), then conventional names
    (``self.optimizer``, ``opt_g``, ``optD``, ``netG``). ``optimizer_models``: optimizer
    symbol -> the models whose ``.parameters()`` built it (``optimizerD`` -> {"netD"}).

Events -- what one execution of a block does, in order
    ``classify_call(call)`` -> ``Event`` or None; ``events(body)`` /
    ``function_events(func)`` / ``loop_events[loop]`` (one iteration). Event kinds
    are in ``EVENT_KINDS``: backward, step, zero_grad, clear_grad (``p.grad = None``,
    ``p.grad.zero_()``), scaler_update, unscale, clip, sched_step, train, eval,
    opaque_step (``loss_scaler(loss, optimizer)``: backward and step hidden in a call;
    its ``arg`` is the loss), continue, break, return. Each event carries ``guards``
    (``(test, branch)`` of the ``if``/``except``/``case`` around it inside the block),
    ``loops`` (inner loops around it), ``via`` (call sites followed into functions,
    methods and closures of this file -- including defs nested in loop bodies, and
    ``optimizer.step(closure)``, whose closure runs inside the step: ``step_closures(call)``)
    and ``withs``. A walk follows calls ``MAX_INLINE_DEPTH`` deep and ``MAX_INLINED_CALLS`` in all.
    ``exclusive(a, b)``: two events in different branches of one ``if``.
    ``resolve_local_call(call)`` / ``resolve_function_name(name, at)``: the local def run.

Iterations -- where an optimizer step is judged
    ``step_units``: ``Unit(owner, events, steps)`` -- a loop body, or a per-iteration
    function, with the indices of the steps it judges. A step belongs to the innermost
    loop around it (through calls) whose iteration runs a backward; loops without a
    backward in between (``for opt in optimizers: opt.step()``) are transparent. Steps
    no such loop reaches are judged by the functions that run both a backward and the
    step (``train_step(batch)``, detectron2's ``run_step``, Lightning's manual
    ``training_step``), except ``test*``/``_test*`` functions and utilities fed the caller's loss
    (timm's ``NativeScaler.__call__(loss, optimizer)``). ``training_loops``,
    ``innermost_training_loops()``, ``loop_has_backward(loop)`` are coarser views.

Clearing
    ``clears(clear, step, stepped, strict=False)``: does this clear hit the gradients
    this step applies? ``stepped`` = ``stepped_optimizers(unit)``. Per optimizer:
    same symbol (after ``canonical_target``, which undoes ``opt = self.opt`` copies and
    maps a helper's parameter to the caller's argument), ``model.zero_grad()`` on a
    model the optimizer was built from, another optimizer only if they share
    parameters; not strict, whatever cannot be told apart counts as clearing.

Branch conditions
    ``guard_key(guard)`` / ``guard_keys(event)``: a condition by its text, with ``not``
    folded into the branch, so ``if amp:`` twice, or ``if f:`` and ``if not f:``, line up.

Gradient accumulation and loss division (methods from ``accumulation.AccumulationMixin``)
    ``is_accumulation_test(test)``: a modulo, a counter or flag named for accumulation,
    or a name assigned from one. ``accumulation_gate(events, i)``,
    ``accumulated_backwards(unit, i)`` -> ``[(backward, Accumulation)]`` (kinds: guard,
    exit, micro_loop; ``Accumulation.count()`` is the count as written),
    ``accumulating_opaque_steps()`` (``update_grad=(i + 1) % n == 0``),
    ``is_micro_step_loop(loop)``. ``loss_is_divided(event)``: the backward's loss was
    divided before it (in any spelling, through assignments, helpers' returns, tuple
    unpacking and closure parameters). ``assignments(scope)``: symbol -> assignment
    nodes of one function, not entering nested scopes.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import argument_for, local_base, resolve_function_name, resolve_local_call
from torchlint.analysis.context import iter_children
from torchlint.analysis.dataflow import value_kept
from torchlint.analysis.imports import dotted_name, symbol
from torchlint.analysis.nodes import position
from torchlint.torchmodel.accumulation import (  # noqa: F401  (Accumulation and the name patterns are part of this API)
    ACCUMULATION_NAME,
    MICRO_STEP_NAME,
    Accumulation,
    AccumulationMixin,
)
from torchlint.torchmodel.modules import module_classes

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

OPTIMIZER = "optimizer"
SCHEDULER = "scheduler"
SCALER = "scaler"
MODEL = "model"
CRITERION = "criterion"

_NOT_OPTIMIZERS = ("torch.optim.lr_scheduler.", "torch.optim.swa_utils.")
THIRD_PARTY_OPTIMIZER_PREFIXES = (
    "transformers.AdamW",
    "transformers.Adafactor",
    "transformers.optimization.AdamW",
    "transformers.optimization.Adafactor",
    "timm.optim.",
    "bitsandbytes.optim.",
    "bnb.optim.",
    "apex.optimizers.",
    "torch_optimizer.",
    "deepspeed.ops.adam.",
    "deepspeed.ops.lamb.",
    "lion_pytorch.Lion",
    "schedulefree.",
)
SCHEDULER_PREFIXES = (
    "torch.optim.lr_scheduler.",
    "transformers.get_",
    "transformers.optimization.get_",
    "timm.scheduler.",
    "diffusers.optimization.get_",
)
SCALER_NAMES = frozenset({"torch.amp.GradScaler", "torch.GradScaler"})
MODEL_PREFIXES = ("torchvision.models.", "timm.create_model", "timm.models.")
NOT_MODEL_LAYERS = frozenset({"Parameter", "ParameterList", "ParameterDict", "Module", "Identity"})
# Calls that hand back their (first) argument wrapped or moved, keeping its role.
ROLE_PRESERVING_FUNCTIONS = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.compile",
        "torch.jit.script",
        "torch.nn.SyncBatchNorm.convert_sync_batchnorm",
    }
)
ROLE_PRESERVING_NAMES = frozenset({"DDP", "DistributedDataParallel", "DataParallel", "FSDP"})
ROLE_PRESERVING_METHODS = frozenset({"to", "cuda", "cpu", "half", "float", "bfloat16", "double", "train"})
# `a, b = accelerator.prepare(a, b)`: results are the arguments, in order.
PREPARE_METHODS = frozenset({"prepare", "setup", "initialize", "prepare_model", "setup_module"})

_NAME_HINTS = (
    (re.compile(r"(^|_)sched(uler)?s?($|_)|lr_scheduler|scheduler", re.I), SCHEDULER),
    (re.compile(r"scaler$", re.I), SCALER),
    (re.compile(r"(^|_)(optim|optimi[sz]er|opt)s?($|_)|optimi[sz]er", re.I), OPTIMIZER),
    # GAN code names its pairs optG/optD, optimD, netG/netD (case matters: `options` is no optimizer).
    (re.compile(r"^opt(im)?[A-Z]"), OPTIMIZER),
    (re.compile(r"(^|_)(model|net|network|module)s?($|_)", re.I), MODEL),
    (re.compile(r"^net[A-Z]"), MODEL),
    (re.compile(r"(criterion|loss_fn|loss_func|lossfn)", re.I), CRITERION),
)


@lru_cache(maxsize=4096)  # a pure function of the name; the same few names are asked about often
def role_from_name(name: str) -> str | None:
    """Guess a role from a conventional name (last attribute only: ``self.optimizer`` -> optimizer)."""
    last = name.rsplit(".", 1)[-1]
    for pattern, role in _NAME_HINTS:
        if pattern.search(last):
            return role
    return None


@dataclass(frozen=True)
class Event:
    """One training-relevant action in one execution of a block of code."""

    kind: str  # see EVENT_KINDS
    node: ast.AST  # the call or statement, where it is written (possibly inside a called function)
    target: str | None = None  # optimizer/model symbol the action applies to, when known
    arg: ast.AST | None = None  # for backward: the loss expression (unwrapped from scaler.scale)
    guards: tuple = ()  # ((test node, branch taken), ...) inside the block
    loops: tuple = ()  # loops inside the block that enclose the event (outermost first)
    via: tuple = ()  # call sites followed to reach the event (outermost first)
    withs: tuple = ()  # with-statement items around the event, inside the block

    @property
    def site(self) -> ast.AST:
        """Where to report: the outermost call site in the block, or the event itself."""
        return self.via[0] if self.via else self.node


EVENT_KINDS = (
    "backward",  # loss.backward(), scaler.scale(loss).backward(), accelerator.backward(loss)...
    "step",  # optimizer.step(), scaler.step(optimizer)
    "zero_grad",  # optimizer.zero_grad(), model.zero_grad()
    "clear_grad",  # p.grad = None, p.grad.zero_() (applies to whatever p ranges over)
    "scaler_update",
    "unscale",
    "clip",
    "sched_step",
    "train",  # model.train() / model.train(True)
    "eval",  # model.eval() / model.train(False)
    "opaque_step",  # a callable given both a loss and an optimizer (e.g. timm/MAE loss_scaler)
    "continue",
    "break",
    "return",
)

STEP_METHODS = frozenset({"step", "optimizer_step"})  # opt.step(), xm.optimizer_step(opt)
BACKWARD_FUNCTIONS = frozenset({"torch.autograd.backward"})
BACKWARD_METHODS = frozenset({"backward", "manual_backward"})  # accelerator/fabric .backward(loss)
CLIP_FUNCTIONS = frozenset(
    {"torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_value_", "torch.nn.utils.clip_grad_norm"}
)
CLIP_METHODS = frozenset({"clip_grad_norm_", "clip_grad_value_", "clip_gradients"})
# Methods _classify_call can turn into an event (any other method call is no event, except
# torch._foreach_zero_).
_CLASSIFIED_METHODS = (
    BACKWARD_METHODS | CLIP_METHODS | {"step", "zero_grad", "zero_", "update", "unscale_", "eval", "train"}
)


class TrainingModel(AccumulationMixin):
    MAX_INLINE_DEPTH = 4
    # Calls followed per walk: helpers that call many helpers would otherwise make a walk
    # exponential in MAX_INLINE_DEPTH (fan-out ** depth bodies).
    MAX_INLINED_CALLS = 64

    def __init__(self, ctx: FileContext):
        self.ctx = ctx

    # ----- roles ------------------------------------------------------------------------------
    def constructor_role(self, call: ast.Call) -> str | None:
        """The role of the object a call constructs, if the call is a known constructor."""
        # Memoised per call: roles, several rules and the run model ask about the same calls.
        cache = self._constructed
        try:
            return cache[call]
        except KeyError:
            role = cache[call] = self._constructor_role(call)
            return role

    @cached_property
    def _constructed(self) -> dict:
        return {}

    def _constructor_role(self, call: ast.Call) -> str | None:
        ctx = self.ctx
        qual = ctx.call_qualname(call)
        if qual:
            if qual.startswith("torch.optim.") and not qual.startswith(_NOT_OPTIMIZERS):
                last = qual.rsplit(".", 1)[-1]
                if last[:1].isupper():
                    return OPTIMIZER
            if qual.startswith(THIRD_PARTY_OPTIMIZER_PREFIXES):
                return SCHEDULER if "schedul" in qual.lower() else OPTIMIZER
            if qual.startswith(SCHEDULER_PREFIXES):
                return SCHEDULER
            if qual in SCALER_NAMES:
                return SCALER
            if qual.startswith("torch.nn."):
                last = qual.rsplit(".", 1)[-1]
                if last.endswith("Loss"):
                    return CRITERION
                if last[:1].isupper() and qual.count(".") == 2 and last not in NOT_MODEL_LAYERS:
                    return MODEL
            if qual.startswith(MODEL_PREFIXES):
                return MODEL
            if qual.startswith("transformers.") and qual.endswith(".from_pretrained"):
                return MODEL
        func = call.func
        if isinstance(func, ast.Name) and func.id in module_classes(ctx):
            return MODEL
        if isinstance(func, ast.Attribute) and func.attr == "from_pretrained":
            base = dotted_name(func.value) or ""
            if base.rsplit(".", 1)[-1].startswith("Auto") and "Tokenizer" not in base and "Config" not in base:
                return MODEL
        return None

    @cached_property
    def roles(self) -> dict[str, str]:
        """Symbol -> role, from every assignment in the file (last binding wins per symbol)."""
        roles: dict[str, str] = {}
        for node in self.ctx.nodes(ast.Assign, ast.AnnAssign):
            value = node.value
            if value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                self._bind(target, value, roles)
        return roles

    def _bind(self, target: ast.AST, value: ast.AST, roles: dict[str, str]) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, ast.Call) and self._is_prepare_call(value):
                for sub, arg in zip(target.elts, value.args):
                    role = self.expr_role(arg, roles)
                    key = symbol(sub)
                    if role and key:
                        roles[key] = role
            elif isinstance(value, (ast.Tuple, ast.List)):
                for sub, val in zip(target.elts, value.elts):
                    self._bind(sub, val, roles)
            return
        key = symbol(target)
        if key is None:
            return
        role = self.expr_role(value, roles)
        if role:
            roles[key] = role

    @staticmethod
    def _is_prepare_call(call: ast.Call) -> bool:
        return isinstance(call.func, ast.Attribute) and call.func.attr in PREPARE_METHODS

    def expr_role(self, expr: ast.AST, roles: dict[str, str] | None = None) -> str | None:
        """The role of the value an expression evaluates to, when it can be told."""
        if roles is None:
            roles = self.roles
        if isinstance(expr, ast.Call):
            role = self.constructor_role(expr)
            if role:
                return role
            func = expr.func
            qual = self.ctx.call_qualname(expr)
            wrapper = (qual in ROLE_PRESERVING_FUNCTIONS) or (
                isinstance(func, ast.Name) and func.id in ROLE_PRESERVING_NAMES
            )
            if wrapper and expr.args:
                return self.expr_role(expr.args[0], roles)
            if isinstance(func, ast.Attribute) and func.attr in ROLE_PRESERVING_METHODS:
                return self.expr_role(func.value, roles)
            if self._is_prepare_call(expr) and len(expr.args) == 1:
                return self.expr_role(expr.args[0], roles)
            return None
        key = symbol(expr)
        if key is None:
            return None
        return roles.get(key)

    def role_of(self, expr_or_symbol) -> str | None:
        """Role of a symbol or expression: from assignments, then from its conventional name."""
        key = expr_or_symbol if isinstance(expr_or_symbol, str) else symbol(expr_or_symbol)
        if key is None:
            return self.expr_role(expr_or_symbol) if isinstance(expr_or_symbol, ast.AST) else None
        role = self.roles.get(key)
        if role:
            return role
        return role_from_name(key.split("[", 1)[0])

    # ----- classifying calls ----------------------------------------------------------------------
    def classify_call(self, call: ast.Call) -> Event | None:
        # Memoised per call (events are frozen): the event walks, loops and several rules
        # classify the same calls again and again.
        cache = self._classified
        try:
            return cache[call]
        except KeyError:
            event = cache[call] = self._classify_call(call)
            return event

    @cached_property
    def _classified(self) -> dict:
        return {}

    def _classify_call(self, call: ast.Call) -> Event | None:
        ctx = self.ctx
        func = call.func
        qual = ctx.call_qualname(call)
        if qual in BACKWARD_FUNCTIONS:
            return Event("backward", call, arg=call.args[0] if call.args else None)
        if qual in CLIP_FUNCTIONS:
            return Event("clip", call)
        if qual == "torch_xla.core.xla_model.optimizer_step" and call.args:
            return Event("step", call, target=symbol(call.args[0]))  # xm.optimizer_step(optimizer)
        if not isinstance(func, ast.Attribute):
            return None
        method = func.attr
        if method not in _CLASSIFIED_METHODS:  # most calls: decided before spelling out the owner
            if qual == "torch._foreach_zero_":
                return Event("clear_grad", call)
            return None
        owner = func.value
        if method not in ("train", "eval") and self._runs_own_method(call):
            return None  # `self.zero_grad()` of a trainer class: its body (what it clears) decides

        owner_key = symbol(owner)
        if method in BACKWARD_METHODS:
            if call.args:  # accelerator.backward(loss), self.manual_backward(loss)
                return Event("backward", call, target=owner_key, arg=call.args[0])
            return Event("backward", call, arg=self._unwrap_scaled(owner))
        if method == "step":
            role = self.role_of(owner) if owner_key else None
            if role == SCALER:
                target = symbol(call.args[0]) if call.args else None
                return Event("step", call, target=target)
            if role == SCHEDULER:
                return Event("sched_step", call, target=owner_key)
            if role == OPTIMIZER:
                return Event("step", call, target=owner_key)
            return None
        if method == "zero_grad":
            return Event("zero_grad", call, target=owner_key)
        if method == "zero_" and isinstance(owner, ast.Attribute) and _is_grad_attr(owner):
            return Event("clear_grad", call)  # `p.grad.zero_()` (a bare `detach_()` clears nothing)
        if qual == "torch._foreach_zero_":
            return Event("clear_grad", call)
        if method == "update" and owner_key and self.role_of(owner) == SCALER:
            return Event("scaler_update", call, target=owner_key)
        if method == "unscale_":
            return Event("unscale", call, target=symbol(call.args[0]) if call.args else None)
        if method in CLIP_METHODS:
            return Event("clip", call, target=owner_key)
        if method == "eval" and not call.args:
            return Event("eval", call, target=owner_key)
        if method == "train":
            # model.train(), model.train(True), model.train(False), model.train(mode=False);
            # a mode held in a variable (model.train(was_training)) could be either.
            mode = call.args[0] if call.args else next((kw.value for kw in call.keywords if kw.arg == "mode"), None)
            if mode is None or (isinstance(mode, ast.Constant) and mode.value is True):
                return Event("train", call, target=owner_key)
            if isinstance(mode, ast.Constant) and mode.value is False:
                return Event("eval", call, target=owner_key)
            return None
        return None

    def _runs_own_method(self, call: ast.Call) -> bool:
        """``self.<method>(...)`` where the class (or a base of this file) defines the method: the
        walk follows its body instead of taking the name's meaning. Mode switches are left out:
        an overriding ``train()`` still switches the mode (it must call the base's)."""
        owner = call.func.value
        return isinstance(owner, ast.Name) and owner.id == "self" and self.resolve_local_call(call) is not None

    def _unwrap_scaled(self, expr: ast.AST) -> ast.AST:
        """``scaler.scale(loss)`` -> ``loss`` (also inside ``typing.cast(Tensor, ...)``); anything else unchanged."""
        kept = value_kept(self.ctx, expr)
        if kept is not None:
            return self._unwrap_scaled(kept)
        if (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr == "scale"
            and expr.args
        ):
            return expr.args[0]
        return expr

    def _opaque_step(self, call: ast.Call) -> Event | None:
        """A call handed both a loss-like value and an optimizer (``loss_scaler(loss, optimizer)``)."""
        if len(call.args) + len(call.keywords) < 2:
            return None
        args = list(call.args) + [kw.value for kw in call.keywords]
        # The cheap test first: most calls have no loss-named argument.
        loss = next((a for a in args if (symbol(a) or "").rsplit(".", 1)[-1].startswith("loss")), None)
        if loss is None:
            return None
        opt = next((symbol(a) for a in args if symbol(a) and self.role_of(a) == OPTIMIZER), None)
        if opt is None:
            return None
        return Event("opaque_step", call, target=opt, arg=loss)

    # ----- resolving calls into this file (generic: ``analysis.callgraph``) ---------------------
    def resolve_local_call(self, call: ast.Call) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        return resolve_local_call(self.ctx, call)

    def resolve_function_name(self, name: str, at: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        return resolve_function_name(self.ctx, name, at)

    def step_closures(self, call: ast.Call) -> list:
        """The closures an ``optimizer.step(closure)`` call is handed that this file defines
        (a lambda, or a function by name)."""
        found = []
        for arg in list(call.args) + [kw.value for kw in call.keywords if kw.arg == "closure"]:
            if isinstance(arg, ast.Lambda):
                found.append(arg)
            elif isinstance(arg, ast.Name):
                func = self.resolve_function_name(arg.id, call)
                if func is not None:
                    found.append(func)
        return found

    # ----- events -----------------------------------------------------------------------------------
    def events(self, body: list[ast.stmt]) -> list[Event]:
        """The ordered events of one execution of ``body`` (following calls into this file)."""
        out: list[Event] = []
        saved, self._inline_budget = getattr(self, "_inline_budget", None), self.MAX_INLINED_CALLS
        try:
            self._walk_block(body, out, guards=(), loops=(), via=(), withs=(), stack=())
        finally:
            self._inline_budget = saved
        return out

    def _may_inline(self, func, stack) -> bool:
        if func in stack or len(stack) >= self.MAX_INLINE_DEPTH or self._inline_budget <= 0:
            return False
        self._inline_budget -= 1
        return True

    def function_events(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Event]:
        return self.events(func.body)

    def _walk_block(self, body, out, guards, loops, via, withs, stack) -> None:
        for stmt in body:
            self._walk_stmt(stmt, out, guards, loops, via, withs, stack)

    def _walk_stmt(self, stmt, out, guards, loops, via, withs, stack) -> None:
        if type(stmt) is ast.Expr:  # the commonest statement: skip the chain of tests below
            self._walk_expr(stmt, out, guards, loops, via, withs, stack)
            return
        args = (out, guards, loops, via, withs, stack)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return  # definitions run when called
        if isinstance(stmt, ast.If):
            self._walk_expr(stmt.test, *args)
            self._walk_block(stmt.body, out, guards + ((stmt.test, True),), loops, via, withs, stack)
            self._walk_block(stmt.orelse, out, guards + ((stmt.test, False),), loops, via, withs, stack)
            return
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            header = stmt.iter if isinstance(stmt, (ast.For, ast.AsyncFor)) else stmt.test
            self._walk_expr(header, *args)
            self._walk_block(stmt.body, out, guards, loops + (stmt,), via, withs, stack)
            self._walk_block(stmt.orelse, out, guards, loops, via, withs, stack)
            return
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self._walk_expr(item.context_expr, *args)
            self._walk_block(stmt.body, out, guards, loops, via, withs + tuple(stmt.items), stack)
            return
        if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            self._walk_block(stmt.body, *args)
            for handler in stmt.handlers:
                self._walk_block(handler.body, out, guards + ((handler, True),), loops, via, withs, stack)
            self._walk_block(stmt.orelse, *args)
            self._walk_block(stmt.finalbody, *args)
            return
        if isinstance(stmt, ast.Match):
            self._walk_expr(stmt.subject, *args)
            for case in stmt.cases:
                self._walk_block(case.body, out, guards + ((case, True),), loops, via, withs, stack)
            return
        if isinstance(stmt, (ast.Continue, ast.Break)):
            out.append(Event(type(stmt).__name__.lower(), stmt, guards=guards, loops=loops, via=via, withs=withs))
            return
        if isinstance(stmt, ast.Return):
            if stmt.value is not None:
                self._walk_expr(stmt.value, *args)
            if not via:  # a return inside a followed call ends that call, not the block
                out.append(Event("return", stmt, guards=guards, loops=loops, via=via, withs=withs))
            return
        if isinstance(stmt, ast.Assign):
            self._walk_expr(stmt.value, *args)
            for target in stmt.targets:
                if isinstance(target, ast.Attribute) and target.attr == "grad" and _clears_value(self.ctx, stmt.value):
                    out.append(Event("clear_grad", stmt, guards=guards, loops=loops, via=via, withs=withs))
            return
        self._walk_expr(stmt, *args)

    def _call_plan(self, node) -> list:
        """The calls of one expression in execution order, each with what it means for the events
        (a classified event, a local function it runs, or an opaque step). Cached: loops nest and
        helpers are inlined, so the same statement is walked many times."""
        cache = self._plan_cache
        plan = cache.get(node)
        if plan is None:
            calls = self._calls_in(node)
            # Inner calls run before outer ones: scaler.scale(loss) before .backward().
            calls.sort(key=lambda c: (c.end_lineno or 0, c.end_col_offset or 0))
            plan = []
            for call in calls:
                event = self.classify_call(call)
                target = self.resolve_local_call(call) if event is None else None
                opaque = self._opaque_step(call) if event is None and target is None else None
                if event is not None or target is not None or opaque is not None:
                    plan.append((call, event, target, opaque))
            cache[node] = plan
        return plan

    @cached_property
    def _plan_cache(self) -> dict:
        return {}

    def _calls_in(self, node) -> list:
        """The calls of a simple statement, or of one expression hanging off a statement (an
        ``if`` test, a loop header, a ``with`` item), not inside lambdas or nested defs --
        from a per-file index of calls by statement rather than a walk of every expression."""
        parent = self.ctx.parent(node)
        if isinstance(node, ast.stmt):
            return [call for call, _ in self._calls_by_statement.get(node, ())]
        if isinstance(parent, (ast.stmt, ast.withitem)):
            statement = parent if isinstance(parent, ast.stmt) else self.ctx.parent(parent)
            return [call for call, tops in self._calls_by_statement.get(statement, ()) if node in tops]
        return [n for n in _walk_no_scopes(node) if isinstance(n, ast.Call)]

    @cached_property
    def _calls_by_statement(self) -> dict:
        """Statement -> [(call, the two nodes just below the statement on the way to the call)]."""
        index: dict = {}
        parents = self.ctx.parents
        for call in self.ctx.calls:
            child, below = call, None
            current = parents.get(call)
            # Exact type checks: this runs for every call of the file.
            while current is not None and type(current) not in _STATEMENT_TYPES:
                if type(current) is ast.Lambda:
                    break
                child, below = current, child
                current = parents.get(current)
            if current is not None and type(current) in _STATEMENT_TYPES:
                index.setdefault(current, []).append((call, (child, below)))
        return index

    def _walk_expr(self, node, out, guards, loops, via, withs, stack) -> None:
        for call, event, target, opaque in self._call_plan(node):
            if event is not None:
                if event.kind == "step":
                    # `optimizer.step(closure)` (LBFGS) runs the closure -- its zero_grad and
                    # backward -- inside the step, before the update.
                    for closure in self.step_closures(call):
                        if isinstance(closure, ast.Lambda):
                            self._walk_expr(closure.body, out, guards, loops, via + (call,), withs, stack)
                        elif self._may_inline(closure, stack):
                            self._walk_block(closure.body, out, guards, loops, via + (call,), withs, stack + (closure,))
                out.append(_place(event, guards, loops, via, withs))
                continue
            if target is not None:
                if self._may_inline(target, stack):
                    self._walk_block(target.body, out, guards, loops, via + (call,), withs, stack + (target,))
                    continue
                opaque = self._opaque_step(call)
            if opaque is not None:
                out.append(_place(opaque, guards, loops, via, withs))

    # ----- loops ------------------------------------------------------------------------------------
    @cached_property
    def loop_events(self) -> dict[ast.AST, list[Event]]:
        """Events of one iteration of every loop in the file."""
        return {loop: self.events(loop.body) for loop in self.ctx.nodes(ast.For, ast.AsyncFor, ast.While)}

    @cached_property
    def training_loops(self) -> list[ast.AST]:
        """Loops whose iterations (including inner loops and called code) run backward and a step."""
        found = []
        for loop, events in self.loop_events.items():
            kinds = {e.kind for e in events}
            if "backward" in kinds and ("step" in kinds or "opaque_step" in kinds) or "opaque_step" in kinds:
                found.append(loop)
        return found

    def is_training_loop(self, loop: ast.AST) -> bool:
        return loop in set(self.training_loops)

    def iteration_events(self, loop: ast.AST) -> list[Event]:
        """``loop_events[loop]``, computed for this loop alone while ``loop_events`` is not built
        (rules that look at a few loops need not pay for every loop of the file)."""
        if "loop_events" in self.__dict__:
            return self.loop_events[loop]
        cache = self.__dict__.setdefault("_iteration_events", {})
        if loop not in cache:
            cache[loop] = self.events(loop.body)
        return cache[loop]

    def trains_each_iteration(self, loop: ast.AST) -> bool:
        """``loop in training_loops``, judged for this loop alone (same criterion)."""
        kinds = {e.kind for e in self.iteration_events(loop)}
        return "opaque_step" in kinds or ("backward" in kinds and "step" in kinds)

    def innermost_training_loops(self) -> Iterator[ast.AST]:
        """Training loops that contain no other training loop in their own body."""
        loops = self.training_loops
        for loop in loops:
            if not any(other is not loop and self.ctx.is_inside(other, loop) for other in loops):
                yield loop

    # ----- iterations: where each optimizer step is judged --------------------------------------
    def loop_has_backward(self, loop: ast.AST) -> bool:
        """Whether one iteration of ``loop`` runs a backward pass (directly, in inner loops or in called code)."""
        return any(e.kind in BACKWARD_KINDS for e in self.loop_events.get(loop, ()))

    @cached_property
    def step_units(self) -> list[Unit]:
        """The blocks that stand for one training iteration, each with the optimizer steps it judges.

        A step is judged by the innermost loop around it (through calls into this file's
        functions) whose iteration runs a backward; loops in between that run no backward
        (``for opt in optimizers: opt.step()``) are transparent. A step that no such loop
        reaches is judged by every function whose body runs both a backward and the step:
        such a function (``train_step(batch)``, detectron2's ``run_step``, Lightning's manual
        ``training_step``) is called once per iteration by a caller this file does not show.
        """
        attrs = {c.func.attr for c in self.ctx.calls if isinstance(c.func, ast.Attribute)}
        if not attrs & STEP_METHODS or not (attrs & BACKWARD_METHODS or "loss" in self.ctx.source):
            return []
        units: list[Unit] = []
        judged: set[ast.AST] = set()
        for loop, events in self.loop_events.items():
            if not any(e.kind in BACKWARD_KINDS for e in events):
                continue
            steps = tuple(
                i
                for i, e in enumerate(events)
                if e.kind == "step" and not any(self.loop_has_backward(inner) for inner in e.loops)
            )
            if steps:
                units.append(Unit(loop, tuple(events), steps))
                judged.update(events[i].node for i in steps)
        for func in self._functions_reaching_training_calls():
            if _is_test_name(func.name) or _in_test_function(self.ctx, func):
                continue  # a test runs one step to check something; it is not an iteration
            events = self.function_events(func)
            if not any(e.kind in BACKWARD_KINDS and not self._loss_is_parameter(e, func) for e in events):
                continue  # a backward-and-step utility fed the caller's loss (timm's NativeScaler)
            steps = tuple(
                i
                for i, e in enumerate(events)
                if e.kind == "step"
                and e.node not in judged
                and not any(self.loop_has_backward(inner) for inner in e.loops)
            )
            if steps:
                units.append(Unit(func, tuple(events), steps))
        return units

    def _functions_reaching_training_calls(self) -> list:
        """Functions that contain a backward or step call, or call (by name, two levels deep) one that does:
        the only ones whose events can hold both. A cheap filter so that not every function is walked."""
        ctx = self.ctx
        marked: set = set()
        for call in ctx.calls:
            func = call.func
            if isinstance(func, ast.Attribute) and (func.attr in BACKWARD_METHODS or func.attr in STEP_METHODS):
                outer = ctx.enclosing_function(call)
                while outer is not None and outer not in marked:
                    marked.add(outer)
                    outer = ctx.enclosing_function(outer)
        for _ in range(2):
            names = {f.name for f in marked}
            for call in ctx.calls:
                func = call.func
                name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
                if name in names:
                    outer = ctx.enclosing_function(call)
                    if outer is not None:
                        marked.add(outer)
        return [f for f in ctx.nodes(ast.FunctionDef, ast.AsyncFunctionDef) if f in marked]

    def _loss_is_parameter(self, event: Event, func: ast.AST) -> bool:
        """Whether a backward's loss is a parameter of ``func`` (its caller computed it)."""
        if event.via or event.arg is None:
            return False
        root = event.arg
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        if isinstance(root, ast.Call) and isinstance(root.func, ast.Attribute):
            # `loss.mean()` is still the parameter; `self.loss(out)` is computed here.
            return self._loss_is_parameter(Event(event.kind, event.node, arg=root.func.value), func)
        if (
            not isinstance(root, ast.Name)
            or root.id in ("self", "cls")
            or self.ctx.enclosing_function(event.node) is not func
        ):
            return False
        params = func.args
        names = {a.arg for a in params.posonlyargs + params.args + params.kwonlyargs}
        defs = self.assignments(func).get(root.id)
        if not defs:
            return root.id in names
        # `with amp.scale_loss(loss, optimizer) as scaled_loss:` -- still the caller's loss.
        return all(
            any(isinstance(n, ast.Name) and n.id in names and "loss" in n.id for n in _walk_no_scopes(_def_value(d)))
            for d in defs
        )

    # ----- which optimizer a clearing call clears -------------------------------------------------
    @cached_property
    def optimizer_models(self) -> dict[str, frozenset[str]]:
        """Optimizer symbol -> symbols of the models whose ``.parameters()`` it was built from
        (``optimizerD = Adam(netD.parameters())`` -> {"netD"}); absent when it cannot be told."""
        found: dict[str, frozenset[str]] = {}
        for node in self.ctx.nodes(ast.Assign):
            value = node.value
            if not (
                isinstance(value, ast.Call) and len(node.targets) == 1 and self.constructor_role(value) == OPTIMIZER
            ):
                continue
            key = symbol(node.targets[0])
            params = value.args[0] if value.args else next((k.value for k in value.keywords if k.arg == "params"), None)
            if key is None or params is None:
                continue
            models = set()
            for sub in _walk_no_scopes(params):
                if (
                    isinstance(sub, ast.Call)
                    and isinstance(sub.func, ast.Attribute)
                    and sub.func.attr in ("parameters", "named_parameters")
                ):
                    owner = symbol(sub.func.value)
                    if owner:
                        models.add(owner)
            if models:
                found[key] = frozenset(models)
        self._lightning_optimizer_models(found)
        return found

    def _lightning_optimizer_models(self, found: dict) -> None:
        """``opt_g, opt_d = self.optimizers()`` in a LightningModule: the optimizers
        ``configure_optimizers`` returns, in order (``return [opt_g, opt_d]`` or
        ``return [opt_g, opt_d], [sched]``), give their parameters to the unpacked names."""
        for node in self.ctx.nodes(ast.Assign):
            value = node.value
            if not (
                len(node.targets) == 1
                and isinstance(node.targets[0], (ast.Tuple, ast.List))
                and isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and value.func.attr == "optimizers"
                and isinstance(value.func.value, ast.Name)
                and value.func.value.id == "self"
            ):
                continue
            cls = self.ctx.enclosing(node, ast.ClassDef)
            while cls is not None:
                configure = next(
                    (
                        f
                        for f in cls.body
                        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name == "configure_optimizers"
                    ),
                    None,
                )
                if configure is not None:
                    break
                cls = local_base(self.ctx, cls)
            if cls is None:
                continue
            for ret in _walk_no_scopes_body(configure):
                if not isinstance(ret, ast.Return) or not isinstance(ret.value, (ast.List, ast.Tuple)):
                    continue
                elts = ret.value.elts
                if elts and isinstance(elts[0], (ast.List, ast.Tuple)):
                    elts = elts[0].elts
                for target, returned in zip(node.targets[0].elts, elts):
                    models = found.get(symbol(returned) or "")
                    key = symbol(target)
                    if models and key and key not in found:
                        found[key] = models
                break

    def _aliases(self, scope: ast.AST) -> dict[str, str]:
        """``name -> symbol`` for plain copies in one function (``optimizer = self.optimizer``)."""
        cache = self._alias_cache
        if scope not in cache:
            aliases: dict[str, str] = {}
            for node in self.assignments(scope):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    value = symbol(node.value) if isinstance(node.value, (ast.Name, ast.Attribute)) else None
                    if value and value != node.targets[0].id:
                        aliases[node.targets[0].id] = value
            cache[scope] = aliases
        return cache[scope]

    @cached_property
    def _alias_cache(self) -> dict:
        return {}

    def canonical_target(self, event: Event) -> str | None:
        """The event's target with local copies undone (``opt = self.opt; opt.step()`` -> ``self.opt``)."""
        target = event.target
        if target is None:
            return None
        at, via = event.node, event.via
        for _ in range(self.MAX_INLINE_DEPTH + 1):
            scope = self.ctx.enclosing_scope(at)
            aliases = self._aliases(scope)
            head, _, rest = target.partition(".")
            for _ in range(3):
                if head not in aliases:
                    break
                target = aliases[head] + ("." + rest if rest else "")
                head, _, rest = target.partition(".")
            # A parameter of a helper reached through a call: the caller's argument (closure(opt_1)).
            if not (
                via
                and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef))
                and self.resolve_local_call(via[-1]) is scope
            ):
                break
            arg = _argument_for(via[-1], scope, head)
            key = symbol(arg) if arg is not None else None
            if key is None:
                break
            target = key + ("." + rest if rest else "")
            at, via = via[-1], via[:-1]
        return target

    def _loop_variable(self, event: Event) -> bool:
        """Whether the event's target is the variable of a loop around it (``for opt in opts: opt.zero_grad()``)."""
        for loop in event.loops:
            if isinstance(loop, (ast.For, ast.AsyncFor)) and event.target and symbol(loop.target) == event.target:
                return True
        return False

    def _is_model_target(self, target: str, node: ast.AST) -> bool:
        if self.role_of(target) == MODEL or any(target in models for models in self.optimizer_models.values()):
            return True
        if target == "self":
            cls = self.ctx.enclosing(node, ast.ClassDef)
            return cls is not None and cls.name in module_classes(self.ctx)
        return False

    def clears(self, clear: Event, step: Event, stepped: frozenset, strict: bool = False) -> bool:
        """Whether the clearing event ``clear`` clears the gradients ``step`` applies.

        ``stepped`` holds the (canonical) optimizers stepped in the same iteration. Not
        strict (TL001: "is this optimizer ever cleared?"), anything that cannot be told
        apart counts as clearing. Strict (TL002: "does this clear wipe what the step is
        about to apply?"), only a clear that surely hits the step's optimizer counts.
        """
        if clear.kind == "clear_grad":
            return not strict
        opt = self.canonical_target(step)
        target = self.canonical_target(clear)
        if target is None or opt is None or self._loop_variable(clear):
            return not strict or (opt is not None and len(stepped) == 1)
        if target == opt or _last(target) == _last(opt):
            return True
        if self._is_model_target(target, clear.node):
            models = self.optimizer_models.get(opt) or self.optimizer_models.get(step.target or "")
            if models:
                return any(_same_module(target, m) for m in models)
            return not strict or len(stepped) == 1
        if self.role_of(target) == OPTIMIZER:
            if len(stepped) == 1:
                return True
            # Another optimizer clears this one's gradients only if they are known to share
            # parameters: two optimizers almost always split the parameters (a GAN's pair).
            mine, theirs = self.optimizer_models.get(opt), self.optimizer_models.get(target)
            if mine and theirs:
                return any(_same_module(a, b) for a in mine for b in theirs)
            return False
        return not strict

    def function_events_around(self, unit: Unit) -> list[Event]:
        """Events of the function (or module) that holds a loop unit, outside the loop itself."""
        scope = self.ctx.enclosing_scope(unit.owner)
        body = scope.body if hasattr(scope, "body") and isinstance(scope.body, list) else []
        return [e for e in self.events(body) if unit.owner not in e.loops]

    def stepped_optimizers(self, unit: Unit) -> frozenset:
        return frozenset(self.canonical_target(unit.events[i]) for i in unit.steps)

    # ----- branch conditions -------------------------------------------------------------------------
    def guard_key(self, guard) -> tuple:
        """A key that makes two ``if`` tests with the same text (``if use_amp:`` twice) the same condition."""
        test, branch = guard
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, branch = test.operand, not branch  # `if not flag:` is the other branch of `if flag:`
        if isinstance(test, ast.expr):
            return (self._text(test), branch)
        return (id(test), branch)

    def guard_keys(self, event: Event) -> frozenset:
        return frozenset(self.guard_key(g) for g in event.guards)

    def _text(self, node: ast.AST) -> str:
        cache = self._text_cache
        if node not in cache:
            cache[node] = ast.unparse(node)
        return cache[node]

    @cached_property
    def _text_cache(self) -> dict:
        return {}

    # ----- assignments and the value a loss holds ------------------------------------------------------
    def assignments(self, scope: ast.AST) -> dict[str, list[ast.AST]]:
        """Assignments in one function (or the module), not inside nested scopes, by target
        symbol, in source order: ``Assign``, ``AnnAssign``, ``AugAssign`` and tuple unpacking."""
        cache = self._assign_cache
        if scope not in cache:
            found: dict[str, list[ast.AST]] = {}
            body = scope.body if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)) else [scope]
            for stmt in body:
                for node in _walk_no_scopes(stmt):
                    if isinstance(node, ast.Assign):
                        targets = node.targets
                    elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
                        targets = [node.target]
                    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                        targets = [node.optional_vars]  # `with amp.scale_loss(loss, opt) as scaled:`
                    else:
                        continue
                    for target in targets:
                        for sub in _flatten_targets(target):
                            key = symbol(sub)
                            if key:
                                found.setdefault(key, []).append(node)
            for nodes in found.values():  # the walk is depth-first from the end: restore source order
                nodes.sort(key=position)
            cache[scope] = found
        return cache[scope]

    @cached_property
    def _assign_cache(self) -> dict:
        return {}


def _place(event: Event, guards, loops, via, withs) -> Event:
    return Event(event.kind, event.node, event.target, event.arg, guards, loops, via, withs)


def _walk_no_scopes(node: ast.AST) -> Iterator[ast.AST]:
    """Like ast.walk, but does not enter lambdas, nested functions or comprehensions' scopes."""
    # iter_children rather than ast.iter_child_nodes: several times faster, and it leaves out
    # the shared Load/Store/operator singletons that no caller looks for.
    stack = [node]
    pop, push = stack.pop, stack.append
    while stack:
        current = pop()
        yield current
        for child in iter_children(current):
            if type(child) not in _NEW_SCOPES:
                push(child)


_NEW_SCOPES = frozenset({ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})


def _is_none(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is None


def _clears_value(ctx, expr: ast.AST) -> bool:
    """``None`` or fresh zeros (``torch.zeros_like(p)``): what ``p.grad = ...`` clears with."""
    if _is_none(expr):
        return True
    return isinstance(expr, ast.Call) and ctx.call_qualname(expr) in ("torch.zeros_like", "torch.zeros")


def _is_grad_attr(expr: ast.AST) -> bool:
    """``p.grad`` or ``p.grad.data``."""
    if isinstance(expr, ast.Attribute) and expr.attr == "data":
        expr = expr.value
    return isinstance(expr, ast.Attribute) and expr.attr == "grad"


def exclusive(a: Event, b: Event) -> bool:
    """Whether two events sit in different branches of the same ``if`` (or handlers/cases),
    so that one execution of the block cannot run both."""
    taken = {id(test): branch for test, branch in a.guards}
    return any(taken.get(id(test), branch) != branch for test, branch in b.guards)


@dataclass(frozen=True)
class Unit:
    """One training iteration: a loop body or a per-iteration function, its events, and the
    indices (into ``events``) of the optimizer steps this unit judges."""

    owner: ast.AST
    events: tuple
    steps: tuple

    @property
    def is_loop(self) -> bool:
        return isinstance(self.owner, (ast.For, ast.AsyncFor, ast.While))


_STATEMENT_TYPES = frozenset(
    cls for cls in vars(ast).values() if isinstance(cls, type) and issubclass(cls, ast.stmt) and cls is not ast.stmt
)
BACKWARD_KINDS = frozenset({"backward", "opaque_step"})
CLEAR_KINDS = frozenset({"zero_grad", "clear_grad"})


def _last(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _same_module(a: str, b: str) -> bool:
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


def _flatten_targets(target: ast.AST) -> Iterator[ast.AST]:
    if isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            yield from _flatten_targets(elt)
    elif isinstance(target, ast.Starred):
        yield from _flatten_targets(target.value)
    else:
        yield target


def _walk_no_scopes_body(func: ast.AST) -> Iterator[ast.AST]:
    for stmt in func.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield from _walk_no_scopes(stmt)


def _argument_for(call: ast.Call, func: ast.AST, name: str) -> ast.AST | None:
    """The argument expression ``call`` passes for parameter ``name`` of ``func``."""
    return argument_for(call, func, name)


def _is_test_name(name: str) -> bool:
    """``test_x`` and the test helpers ``_test_x`` run one step to check something."""
    return name.lstrip("_").startswith("test")


def _def_value(node: ast.AST) -> ast.AST:
    if isinstance(node, ast.withitem):
        return node.context_expr
    return getattr(node, "value", None) or node


def _in_test_function(ctx, func: ast.AST) -> bool:
    outer = ctx.enclosing_function(func)
    while outer is not None:
        if _is_test_name(outer.name):
            return True
        outer = ctx.enclosing_function(outer)
    return False


def training_model(ctx: FileContext) -> TrainingModel:
    """The file's training-code model, built the first time a rule asks and then shared."""
    return ctx.shared("training", lambda: TrainingModel(ctx))
