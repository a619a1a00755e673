"""Whether a call fills an optimizer's state (momentum buffers, Adam moments).

An optimizer has no state until something fills it: a step, ``load_state_dict(...)``, a write to
``optimizer.state``, or a function that does one of these to the optimizer it is handed. Reading
the optimizer (``type(optimizer)``, logging it, its ``param_groups`` or ``defaults``) fills nothing.
A function of the project is read (through the calls it hands the optimizer on to); one the
linter cannot read (a library's checkpoint loader or trainer) may fill it, unless it only looks at
what it is handed (a builtin such as ``type``, a logging call). Two library calls are known to
fill nothing: a ``prepare``-like call (``amp.initialize(model, optimizer)``,
``accelerator.prepare(...)``) hands its arguments back wrapped, and a learning-rate scheduler's
constructor only sets learning rates in ``param_groups``; a resumed optimizer keeps the state it
had, a fresh one stays empty. An optimizer a read function hands
on through ``**kwargs`` (a factory building classes by name) has no filling shown. The steps the
training model knows at the call site (``scaler.step(optimizer)``, timm's ``loss_scaler(loss,
optimizer)``) are told by ``call_events``, not here.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import resolve_callee
from torchlint.analysis.imports import dotted_name
from torchlint.analysis.inspection import only_inspects
from torchlint.analysis.nodes import argument_for
from torchlint.analysis.reachability import block_holding
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.constructors import Role, constructor_role, is_prepare_call
from torchlint.torchmodel.recording_calls import instance_methods

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

# Methods of an optimizer that fill its state.
_FILLING_METHODS = torch_names.STEP_METHODS | {"load_state_dict"}
# How many calls deep a handed optimizer is followed into the functions of the project.
_MAX_DEPTH = 3


def hands_optimizer(call: ast.Call, optimizer: str) -> bool:
    """Whether ``call`` is handed the optimizer bound to the symbol ``optimizer`` itself."""
    return any(dotted_name(a) == optimizer for a in [*call.args, *(k.value for k in call.keywords)])


def call_fills_state(ctx: FileContext, call: ast.Call, optimizer: str, depth: int = _MAX_DEPTH) -> bool:
    """Whether ``call``, handed the optimizer ``optimizer``, may fill its state: it runs code the
    linter cannot read that does more than look at it, or a function of the project whose body
    (followed through the calls it hands the optimizer on to) steps it, loads its state or writes
    its ``state``. A ``prepare``-like call only wraps what it is handed, a scheduler only sets
    learning rates."""
    if is_prepare_call(call) or constructor_role(ctx, call) is Role.SCHEDULER:
        return False
    callees = _callees(ctx, call)
    if callees is None:
        return not only_inspects(ctx, call)
    if depth == 0:
        return True  # too deep to follow: it may be filled
    for callee_ctx, function in callees:
        parameter = _parameter_holding(call, function, optimizer)
        # None: handed on through `**kwargs`, where it goes is not shown
        if parameter is not None and _body_fills_state(callee_ctx, function, parameter, depth - 1):
            return True
    return False


def _callees(ctx: FileContext, call: ast.Call) -> list[tuple[FileContext, ast.AST]] | None:
    """The functions ``call`` may run: the one ``resolve_callee`` finds, else, for a method called on
    an instance of project classes (``manager.register(model, opt)`` with ``manager = Manager()``,
    a module-level global included), that method of each class; None when one cannot be told."""
    callee = resolve_callee(ctx, call)
    if callee is not None:
        return [callee]
    func = call.func
    if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
        return None
    methods = instance_methods(ctx, func.value, func.attr)
    return None if methods is None else [(method.ctx, method.node) for method in methods]


def _parameter_holding(call: ast.Call, function: ast.AST, optimizer: str) -> str | None:
    arguments = function.args
    for param in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
        if dotted_name(argument_for(call, function, param.arg)) == optimizer:
            return param.arg
    return None


def _body_fills_state(ctx: FileContext, function: ast.AST, name: str, depth: int) -> bool:
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in _FILLING_METHODS and dotted_name(func.value) == name:
                return True
            if hands_optimizer(node, name) and call_fills_state(ctx, node, name, depth):
                return True
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_writes_state(t, name) for t in targets):
                return True
    return False


def _writes_state(target: ast.AST, name: str) -> bool:
    """``optimizer.state[p] = ...`` or ``optimizer.state = ...``."""
    while isinstance(target, ast.Subscript):
        target = target.value
    return dotted_name(target) == f"{name}.state"


# ----- state moved to where its parameters are ------------------------------------------------
def moves_state(ctx: FileContext, stmt: ast.AST, optimizer: str, depth: int = _MAX_DEPTH) -> bool:
    """Whether ``stmt`` moves the state tensors of ``optimizer`` to a device or dtype: a loop
    over its ``state`` (``for s in optimizer.state.values()``, ``.items()`` or its keys) that
    writes a moved tensor (``s[k] = v.to(device)``, ``v.cuda()``) into a container it reaches
    from there, or a call of a function of the project that does so to the optimizer it is
    handed (followed ``depth`` calls deep). After it the state is wherever it was moved to,
    whatever device it was loaded on."""
    for node in ast.walk(stmt):
        if isinstance(node, (ast.For, ast.AsyncFor)) and _iterates_state(node.iter, optimizer):
            if any(_writes_moved_tensor(inner) for inner in ast.walk(node)):
                return True
        elif isinstance(node, ast.Call) and depth and hands_optimizer(node, optimizer):
            callee = resolve_callee(ctx, node)
            if callee is None:
                continue
            parameter = _parameter_holding(node, callee[1], optimizer)
            if parameter is not None and moves_state(callee[0], callee[1], parameter, depth - 1):
                return True
    return False


def _iterates_state(iterable: ast.AST, optimizer: str) -> bool:
    """``optimizer.state``, ``optimizer.state.values()`` or ``.items()``/``.keys()``."""
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) and not iterable.args:
        if iterable.func.attr in ("values", "items", "keys"):
            iterable = iterable.func.value
    return dotted_name(iterable) == f"{optimizer}.state"


def _writes_moved_tensor(node: ast.AST) -> bool:
    """``state[k] = v.to(device)``: an element written with a tensor moved or cast."""
    if not isinstance(node, ast.Assign) or not any(isinstance(t, ast.Subscript) for t in node.targets):
        return False
    value = node.value
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in torch_names.DEVICE_DTYPE_MOVES
    )


# ----- state loaded from an earlier run ------------------------------------------------------------
def loads_state(ctx: FileContext, stmt: ast.AST, optimizers: set[str], depth: int = _MAX_DEPTH) -> bool:
    """Whether ``stmt`` loads the state of one of ``optimizers`` (``optimizer.load_state_dict(
    ckpt["optimizer"])``), directly or through the methods of the same object it calls
    (``self._restore(ckpt)``), followed ``depth`` calls deep."""
    for node in ast.walk(stmt):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        if node.func.attr == "load_state_dict" and dotted_name(node.func.value) in optimizers:
            return True
        if depth and dotted_name(node.func.value) == "self":
            callee = resolve_callee(ctx, node)
            if callee is not None and loads_state(callee[0], callee[1], optimizers, depth - 1):
                return True
    return False


def state_loaded_before(ctx: FileContext, node: ast.AST, optimizers: set[str]) -> bool:
    """Whether the state of one of ``optimizers`` is loaded from a checkpoint before ``node``
    runs: by a statement written before it in a block around it in the same function (``if
    resume: optimizer.load_state_dict(...); scheduler.step()``), or, for ``node`` in a method
    other than ``__init__``, by the class's ``__init__``, which runs before any other method of
    the object. Such an optimizer stepped in an earlier run."""
    function = ctx.enclosing_function(node)
    if function is None:
        return False
    inner = node
    for outer in ctx.ancestors(node):
        block = block_holding(outer, inner)
        if block is not None:
            earlier = block[: next(i for i, s in enumerate(block) if s is inner)]
            if any(loads_state(ctx, s, optimizers) for s in earlier):
                return True
        if outer is function:
            break
        inner = outer
    cls = ctx.parent(function)
    if function.name == "__init__" or not isinstance(cls, ast.ClassDef):
        return False
    init = next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    return init is not None and loads_state(ctx, init, optimizers)


def loaded_beside(ctx: FileContext, stmt: ast.AST, optimizers: set[str]) -> bool:
    """Whether a statement of the block holding ``stmt`` (``if resume:`` ... ``start =
    ckpt["epoch"]``) loads the state of one of ``optimizers``: the path that runs ``stmt`` is
    a resumed run."""
    block = block_holding(ctx.parent(stmt), stmt)
    return block is not None and any(loads_state(ctx, s, optimizers, depth=1) for s in block if s is not stmt)
