"""A model of training code, shared by the rules that reason about training steps.

It answers, once per file:

* which names hold optimizers, schedulers, grad scalers, models and loss modules
  (from constructor calls, ``accelerator.prepare``-style unpacking, wrappers such
  as ``DDP(model)``, and, as a fallback, conventional names);
* for any block of code — a loop body, a function body — the ordered *events* of
  one execution of it: backward passes, optimizer steps, gradient clearing,
  scaler calls, clipping, scheduler steps, train/eval switches, with the branch
  conditions and inner loops around each, following calls into functions,
  methods and closures defined in the same file;
* which loops run training steps (a backward and an optimizer step per iteration).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Iterator

from .imports import dotted_name, symbol

if TYPE_CHECKING:
    from .context import FileContext

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
    (re.compile(r"(^|_)(model|net|network|module)s?($|_)", re.I), MODEL),
    (re.compile(r"(criterion|loss_fn|loss_func|lossfn)", re.I), CRITERION),
)


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

BACKWARD_FUNCTIONS = frozenset({"torch.autograd.backward"})
BACKWARD_METHODS = frozenset({"backward", "manual_backward"})  # accelerator/fabric .backward(loss)
CLIP_FUNCTIONS = frozenset({"torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_value_", "torch.nn.utils.clip_grad_norm"})
CLIP_METHODS = frozenset({"clip_grad_norm_", "clip_grad_value_", "clip_gradients"})


class TrainingModel:
    MAX_INLINE_DEPTH = 4

    def __init__(self, ctx: "FileContext"):
        self.ctx = ctx

    # ----- roles ------------------------------------------------------------------------------
    def constructor_role(self, call: ast.Call) -> str | None:
        """The role of the object a call constructs, if the call is a known constructor."""
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
        if isinstance(func, ast.Name) and func.id in ctx.module_classes:
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
        ctx = self.ctx
        func = call.func
        qual = ctx.call_qualname(call)
        if qual in BACKWARD_FUNCTIONS:
            return Event("backward", call, arg=call.args[0] if call.args else None)
        if qual in CLIP_FUNCTIONS:
            return Event("clip", call)
        if not isinstance(func, ast.Attribute):
            return None
        method = func.attr
        owner = func.value
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
        if method in ("zero_", "detach_") and isinstance(owner, ast.Attribute) and _is_grad_attr(owner):
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
            if call.args and isinstance(call.args[0], ast.Constant) and call.args[0].value is False:
                return Event("eval", call, target=owner_key)
            if not call.args or (isinstance(call.args[0], ast.Constant) and call.args[0].value is True):
                return Event("train", call, target=owner_key)
            return None
        return None

    def _unwrap_scaled(self, expr: ast.AST) -> ast.AST:
        """``scaler.scale(loss)`` -> ``loss``; anything else unchanged."""
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
        args = list(call.args) + [kw.value for kw in call.keywords]
        has_opt = any(self.role_of(a) == OPTIMIZER for a in args if symbol(a))
        has_loss = any((symbol(a) or "").rsplit(".", 1)[-1].startswith("loss") for a in args)
        if has_opt and has_loss:
            opt = next(symbol(a) for a in args if symbol(a) and self.role_of(a) == OPTIMIZER)
            return Event("opaque_step", call, target=opt)
        return None

    # ----- resolving calls into this file -------------------------------------------------------
    def resolve_local_call(self, call: ast.Call) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The function defined in this file that ``call`` runs, when it can be told."""
        ctx = self.ctx
        func = call.func
        if isinstance(func, ast.Name):
            candidates = ctx.functions.get(func.id)
            if not candidates:
                return None
            # Prefer a definition visible from the call: nested in an enclosing function, else module level.
            scopes = [a for a in ctx.ancestors(call) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module))]
            for scope in scopes:
                for cand in candidates:
                    if ctx.parent(cand) is scope:
                        return cand
            return None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            cls = ctx.enclosing(call, ast.ClassDef)
            while cls is not None:
                for stmt in cls.body:
                    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == func.attr:
                        return stmt
                cls = self._local_base(cls)
        return None

    def _local_base(self, cls: ast.ClassDef) -> ast.ClassDef | None:
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in self.ctx.classes:
                return self.ctx.classes[base.id]
        return None

    # ----- events -----------------------------------------------------------------------------------
    def events(self, body: list[ast.stmt]) -> list[Event]:
        """The ordered events of one execution of ``body`` (following calls into this file)."""
        out: list[Event] = []
        self._walk_block(body, out, guards=(), loops=(), via=(), withs=(), stack=())
        return out

    def function_events(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Event]:
        return self.events(func.body)

    def _walk_block(self, body, out, guards, loops, via, withs, stack) -> None:
        for stmt in body:
            self._walk_stmt(stmt, out, guards, loops, via, withs, stack)

    def _walk_stmt(self, stmt, out, guards, loops, via, withs, stack) -> None:
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
                if isinstance(target, ast.Attribute) and target.attr == "grad" and _is_none(stmt.value):
                    out.append(Event("clear_grad", stmt, guards=guards, loops=loops, via=via, withs=withs))
            return
        self._walk_expr(stmt, *args)

    def _walk_expr(self, node, out, guards, loops, via, withs, stack) -> None:
        calls = [n for n in _walk_no_scopes(node) if isinstance(n, ast.Call)]
        # Inner calls run before outer ones: scaler.scale(loss) before .backward().
        calls.sort(key=lambda c: (c.end_lineno or 0, c.end_col_offset or 0))
        for call in calls:
            event = self.classify_call(call)
            if event is not None:
                out.append(_place(event, guards, loops, via, withs))
                continue
            target = self.resolve_local_call(call)
            if target is not None and target not in stack and len(stack) < self.MAX_INLINE_DEPTH:
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
            if "backward" in kinds and ("step" in kinds or "opaque_step" in kinds):
                found.append(loop)
            elif "opaque_step" in kinds:
                found.append(loop)
        return found

    def is_training_loop(self, loop: ast.AST) -> bool:
        return loop in set(self.training_loops)

    def innermost_training_loops(self) -> Iterator[ast.AST]:
        """Training loops that contain no other training loop in their own body."""
        loops = self.training_loops
        for loop in loops:
            if not any(other is not loop and self.ctx.is_inside(other, loop) for other in loops):
                yield loop


def _place(event: Event, guards, loops, via, withs) -> Event:
    return Event(event.kind, event.node, event.target, event.arg, guards, loops, via, withs)


def _walk_no_scopes(node: ast.AST) -> Iterator[ast.AST]:
    """Like ast.walk, but does not enter lambdas, nested functions or comprehensions' scopes."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for child in ast.iter_child_nodes(current):
            if isinstance(child, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            stack.append(child)


def _is_none(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is None


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
