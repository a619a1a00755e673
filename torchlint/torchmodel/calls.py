"""What one call means to a training step: ``call_events(ctx).classify(call)`` -> an ``Event`` or None.

``optimizer.step()``, ``scaler.step(opt)``, ``loss.backward()``, ``opt.zero_grad()``,
``p.grad.zero_()``, ``scheduler.step()``, ``model.eval()``... Whose ``.step()`` it is comes from
the receiver's role (an object of another kind with a ``step`` method is no optimizer step).
``opaque_step(call)``: a call handed both a loss and an optimizer (``loss_scaler(loss, opt)``),
which hides a backward and a step. ``step_closures(call)``: the closures an
``optimizer.step(closure)`` runs.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import resolve_class, resolve_local_call
from torchlint.analysis.dataflow import dataflow, functions_handed, value_kept
from torchlint.analysis.imports import symbol
from torchlint.analysis.nodes import argument, last_name
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.events import Event, EventKind
from torchlint.torchmodel.modules import lightning_mode_method, never_a_module
from torchlint.torchmodel.roles import Role, object_roles

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

# Methods classify() can turn into an event (any other method call is no event, except
# torch._foreach_zero_).
_CLASSIFIED_METHODS = (
    torch_names.BACKWARD_METHODS
    | torch_names.CLIP_METHODS
    | {"step", "zero_grad", "zero_", "update", "unscale_", "eval", "train"}
    | {torch_names.LIGHTNING_FREEZE_METHOD, torch_names.LIGHTNING_UNFREEZE_METHOD}
)


class CallEvents:
    """The meaning of single calls in one file; get the shared instance with ``call_events(ctx)``."""

    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self.roles = object_roles(ctx)

    def classify(self, call: ast.Call) -> Event | None:
        """The event a call is, wherever it is written (no place in a block yet), or None."""
        # Shared per call (events are frozen): the event walks, loops and several rules
        # classify the same calls again and again.
        return self.ctx.shared(("call-event", call), lambda: self._classify(call))

    def _classify(self, call: ast.Call) -> Event | None:
        ctx = self.ctx
        func = call.func
        qual = ctx.call_qualname(call)
        if qual in torch_names.BACKWARD_FUNCTIONS:
            return Event(EventKind.BACKWARD, call, arg=call.args[0] if call.args else None)
        if qual in torch_names.CLIP_FUNCTIONS:
            return Event(EventKind.CLIP, call)
        if qual == torch_names.XLA_OPTIMIZER_STEP and call.args:
            return Event(EventKind.STEP, call, target=symbol(call.args[0]))  # xm.optimizer_step(optimizer)
        if not isinstance(func, ast.Attribute):
            return None
        method = func.attr
        if method not in _CLASSIFIED_METHODS:  # most calls: decided before spelling out the owner
            if qual == torch_names.FOREACH_ZERO:
                return Event(EventKind.CLEAR_GRAD, call)
            return None
        owner = func.value
        if method not in ("train", "eval") and self._runs_own_method(call):
            return None  # `self.zero_grad()` of a trainer class: its body (what it clears) decides
        owner_key = symbol(owner)
        if method in torch_names.BACKWARD_METHODS:
            if self._names_a_module(owner):
                return None  # `wkv_cuda.backward(...)`: an extension's kernel, no autograd backward
            if call.args:  # accelerator.backward(loss), self.manual_backward(loss)
                return Event(EventKind.BACKWARD, call, target=owner_key, arg=call.args[0])
            return Event(EventKind.BACKWARD, call, arg=self._unwrap_scaled(owner))
        if method == "step":
            role = self.roles.role_of(owner) if owner_key else None
            if role == Role.SCALER:
                target = symbol(call.args[0]) if call.args else None
                return Event(EventKind.STEP, call, target=target)
            if role == Role.SCHEDULER:
                return Event(EventKind.SCHED_STEP, call, target=owner_key)
            if role == Role.OPTIMIZER:
                return Event(EventKind.STEP, call, target=owner_key)
            return None
        if method == "zero_grad":
            return Event(EventKind.ZERO_GRAD, call, target=owner_key)
        if method == "zero_" and isinstance(owner, ast.Attribute) and is_grad_attribute(owner):
            return Event(EventKind.CLEAR_GRAD, call)  # `p.grad.zero_()` (a bare `detach_()` clears nothing)
        if qual == torch_names.FOREACH_ZERO:
            return Event(EventKind.CLEAR_GRAD, call)
        if method == "update" and owner_key and self.roles.role_of(owner) == Role.SCALER:
            return Event(EventKind.SCALER_UPDATE, call, target=owner_key)
        if method == "unscale_":
            return Event(EventKind.UNSCALE, call, target=symbol(call.args[0]) if call.args else None)
        if method in torch_names.CLIP_METHODS:
            return Event(EventKind.CLIP, call, target=owner_key)
        if method in (torch_names.LIGHTNING_FREEZE_METHOD, torch_names.LIGHTNING_UNFREEZE_METHOD):
            # A LightningModule's `freeze()` calls `self.eval()`, its `unfreeze()` `self.train()`; any
            # other object's `freeze` is its own business.
            if call.args or call.keywords or lightning_mode_method(ctx, call) is None:
                return None
            kind = EventKind.EVAL if method == torch_names.LIGHTNING_FREEZE_METHOD else EventKind.TRAIN
            return Event(kind, call, target=owner_key)
        if method in ("eval", "train") and never_a_module(ctx, owner):
            return None  # `env.eval()` of a plain project class: no train/eval mode switch
        if method == "eval" and not call.args:
            return Event(EventKind.EVAL, call, target=owner_key)
        if method == "train":
            # model.train(), model.train(True), model.train(False), model.train(mode=False);
            # a mode held in a value (model.train(was_training)) could be either.
            mode = argument(call, 0, "mode")
            if mode is None or (isinstance(mode, ast.Constant) and mode.value is True):
                return Event(EventKind.TRAIN, call, target=owner_key)
            if isinstance(mode, ast.Constant) and mode.value is False:
                return Event(EventKind.EVAL, call, target=owner_key)
            return Event(EventKind.SET_MODE, call, target=owner_key, arg=mode)
        return None

    def _names_a_module(self, owner: ast.AST) -> bool:
        """``owner`` is a module, not a tensor or an accelerator: a name that only ``import x`` /
        ``import x as y``, or one every binding of which in the file (at module level, or in a
        function declaring it ``global``) is a module loader's result (``load(...)`` of
        ``torch.utils.cpp_extension``, ``importlib.import_module(...)``) or a ``None`` placeholder,
        with no local binding of the name in the function of the call; or a namespace of the
        operator registry (``torch.ops.wkv6``), reached from the imported ``torch``."""
        ctx = self.ctx
        if isinstance(owner, ast.Attribute):
            return _operator_namespace(ctx, owner)
        if not isinstance(owner, ast.Name):
            return False
        binding = ctx.imports.bindings.get(owner.id)
        if binding is not None and binding.name is None and binding.level == 0:
            # the module, unless rebound on the way to a value (`model = model.RNNModel(...)`)
            return dataflow(ctx).names_import(owner)
        function = ctx.enclosing_function(owner)
        values = []
        for assign in ctx.nodes(ast.Assign):
            if not any(isinstance(t, ast.Name) and t.id == owner.id for t in assign.targets):
                continue
            scope = ctx.enclosing_function(assign)
            if scope is not None and not ctx.declares_global(scope, owner.id):
                if scope is function:
                    return False  # a local of the calling function
                continue
            if not (isinstance(assign.value, ast.Constant) and assign.value.value is None):
                values.append(assign.value)  # `KERNEL = None`: a placeholder until the load, nothing to call
        return bool(values) and all(
            isinstance(v, ast.Call) and ctx.call_qualname(v) in torch_names.MODULE_LOADERS for v in values
        )

    def _runs_own_method(self, call: ast.Call) -> bool:
        """``self.<method>(...)`` where the class (or a base of this file) defines the method: the
        walk follows its body instead of taking the name's meaning. Mode switches are left out:
        an overriding ``train()`` still switches the mode (it must call the base's)."""
        owner = call.func.value
        return isinstance(owner, ast.Name) and owner.id == "self" and resolve_local_call(self.ctx, call) is not None

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

    def opaque_step(self, call: ast.Call) -> Event | None:
        """A call handed both a loss-like value and an optimizer (``loss_scaler(loss, optimizer)``)."""
        if len(call.args) + len(call.keywords) < 2:
            return None
        if last_name(call.func) in torch_names.LOSS_SCALING_METHODS:
            return None  # apex's `amp.scale_loss(loss, optimizer)` hands back the scaled loss for the caller's backward
        args = list(call.args) + [kw.value for kw in call.keywords]
        # The cheap test first: most calls have no loss-named argument.
        loss = next((a for a in args if (symbol(a) or "").rsplit(".", 1)[-1].startswith("loss")), None)
        if loss is None:
            return None
        opt = next((symbol(a) for a in args if symbol(a) and self.roles.role_of(a) == Role.OPTIMIZER), None)
        if opt is None or self._stores_what_it_is_handed(call):
            return None
        return Event(EventKind.OPAQUE_STEP, call, target=opt, arg=loss)

    def _stores_what_it_is_handed(self, call: ast.Call) -> bool:
        """Whether ``call`` builds an object of a class the project defines whose own ``__init__``
        runs no backward or step (``Trainer(args, model, optim, loss)``): it keeps the loss and the
        optimizer for later, where its methods' own calls show what they do."""
        found = resolve_class(self.ctx, call.func)
        if found is None:
            return False
        init = next((s for s in found[1].body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
        training = torch_names.STEP_METHODS | torch_names.BACKWARD_METHODS
        return init is None or not any(
            isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr in training
            for c in ast.walk(init)
        )

    def step_closures(self, call: ast.Call) -> list:
        """The closures an ``optimizer.step(...)`` call is handed that this file defines: a lambda
        or a function, in any argument or inside a literal container given to it
        (``opt.step(closure)``, ``opt.step(options={"closure": closure})``); the step runs them."""
        return functions_handed(self.ctx, call)


def is_grad_attribute(expr: ast.AST) -> bool:
    """``p.grad`` or ``p.grad.data``."""
    if isinstance(expr, ast.Attribute) and expr.attr == "data":
        expr = expr.value
    return isinstance(expr, ast.Attribute) and expr.attr == "grad"


def replaces_grad(target: ast.Attribute, value: ast.AST) -> bool:
    """Whether ``p.grad = value`` throws away what ``p.grad`` held: ``None``, fresh zeros
    (``torch.zeros_like(p)``), or any gradient written in (``p.grad = torch.from_numpy(g)``, the
    gradients computed elsewhere and copied in) -- a clear, as far as accumulation goes. A value made
    from the old gradient (``p.grad = p.grad * scale``, ``p.grad = p.grad + noise``) keeps it."""
    owner = ast.dump(target.value)
    return not any(
        isinstance(node, ast.Attribute) and node.attr == "grad" and ast.dump(node.value) == owner
        for node in ast.walk(value)
    )


def call_events(ctx: FileContext) -> CallEvents:
    return ctx.shared("call-events", lambda: CallEvents(ctx))


def _operator_namespace(ctx: FileContext, expr: ast.Attribute) -> bool:
    """``torch.ops.<namespace>``: the compiled ops one library registered, written from the imported
    ``torch`` (not a name rebound on the way to a value)."""
    qual = ctx.qualname(expr)
    if qual is None or qual.rpartition(".")[0] not in torch_names.OPERATOR_NAMESPACES:
        return False
    root = expr.value
    while isinstance(root, ast.Attribute):
        root = root.value
    return isinstance(root, ast.Name) and dataflow(ctx).names_import(root)
