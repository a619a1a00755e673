"""What a call builds: the role of the object a constructor call returns, told from what is called.

``constructor_role(ctx, call)``: ``torch.optim.AdamW(...)`` -> optimizer, ``nn.CrossEntropyLoss()``
-> criterion, ``timm.create_model(...)`` -> model, a class of the file -> what its bases make it
(``nn.Module`` -> model, or criterion when the class is named for a loss; ``torch.optim.Optimizer``
-> optimizer; an LR scheduler base -> scheduler; no torch base at all -> ``Role.OTHER``, so that a
``WeightEMA`` with a ``step()`` method is not taken for an optimizer); a class of another file of
the project is read there the same way (``analysis.callgraph.resolve_class``). A call that cannot be
told (a function, a class of a library) is None. ``preserved_argument(ctx, call)``:
the argument a wrapper (``DDP(model)``, ``torch.compile(model)``) hands back as the same object.
``optimizer_holds_state(ctx, call)``: whether the optimizer a call builds can keep state about
parameters (a no-op stand-in subclass cannot).
"""

from __future__ import annotations

import ast
from enum import Enum
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import does_nothing, find_method, resolve_class
from torchlint.analysis.containers import written_items
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.definitions import Definition
from torchlint.analysis.imports import dotted_name
from torchlint.analysis.nodes import method_call
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.modules import module_classes

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext


class Role(Enum):
    """What an object is to the training code."""

    MODEL = "model"
    OPTIMIZER = "optimizer"
    SCHEDULER = "scheduler"
    SCALER = "scaler"
    CRITERION = "criterion"
    # An object the code shows is none of the above (an instance of a class of the file with no
    # torch base): its name is no hint (`ema_optimizer = WeightEMA(...)` is no optimizer).
    OTHER = "other"


def constructor_role(ctx: FileContext, call: ast.Call) -> Role | None:
    """The role of the object a call constructs, if the call is a known constructor."""
    # Shared per call: roles, several rules and the run model ask about the same calls.
    return ctx.shared(("constructor-role", call), lambda: _constructor_role(ctx, call))


def _constructor_role(ctx: FileContext, call: ast.Call) -> Role | None:
    qual = ctx.call_qualname(call)
    if qual:
        role = qualified_role(qual)
        if role is not None:
            return role
    func = call.func
    found = resolve_class(ctx, func)
    if found is not None:
        return class_role(*found)
    if isinstance(func, ast.Subscript):
        return _drawn_class_role(ctx, func)
    if isinstance(func, ast.Name):
        return _bound_class_role(ctx, func)
    if isinstance(func, ast.Attribute) and func.attr == "from_pretrained":
        base = dotted_name(func.value) or ""
        if base.rsplit(".", 1)[-1].startswith("Auto") and "Tokenizer" not in base and "Config" not in base:
            return Role.MODEL
    return None


def _drawn_class_role(ctx: FileContext, drawn: ast.Subscript) -> Role | None:
    """What calling a class drawn from a literal builds (``SCHEDULERS[name](optimizer)`` over
    ``SCHEDULERS = {"step": StepLR, "cosine": CosineAnnealingLR}``): the role every element the file
    writes there gives, when they all agree. Which element is drawn is not known, so what is told
    later of one built object (a scheduler class that replaces torch's ``step()``) must hold for
    all of them here: a scheduler only when every element is one that keeps torch's ``step()``."""
    return _agreed_class_role(ctx, written_items(ctx, drawn))


def _bound_class_role(ctx: FileContext, name: ast.Name) -> Role | None:
    """What calling a name bound to a class builds (``scheduler_function = lrs.StepLR`` on one
    branch, ``= lrs.MultiStepLR`` on another, then ``scheduler_function(optimizer, **kwargs)``): the
    role every class reference that may reach the call gives, when they all agree. A binding that
    is no plain reference to a class (a parameter, a call's result) leaves it unknown."""
    bindings = dataflow(ctx).reaching(name)
    if not bindings or any(b.kind != "assign" or not isinstance(b.value, (ast.Name, ast.Attribute)) for b in bindings):
        return None
    return _agreed_class_role(ctx, [b.value for b in bindings])


def _agreed_class_role(ctx: FileContext, classes) -> Role | None:
    """The role calling any of ``classes`` (class references, None where one is not shown) builds,
    when they all agree. Which one is called is not known, so what is told later of one built
    object (a scheduler class that replaces torch's ``step()``) must hold for all of them: a
    scheduler only when every class is one that keeps torch's ``step()``."""
    roles = set()
    for element in classes:
        if element is None:
            return None
        roles.add(class_reference_role(ctx, element))
    role = roles.pop() if len(roles) == 1 else None
    return role if role is not Role.OTHER else None


def class_reference_role(ctx: FileContext, expr: ast.AST) -> Role | None:
    """The role of what calling the class (or factory) ``expr`` names builds."""
    qual = ctx.qualname(expr) if isinstance(expr, (ast.Name, ast.Attribute)) else None
    if qual:
        role = qualified_role(qual)
        if role is not None:
            return role
    found = resolve_class(ctx, expr)
    if found is None:
        return None
    role = class_role(*found)
    if role is Role.SCHEDULER and _steps_itself(found):
        return None  # its own `step()`: not torch's contract, and not told apart once drawn
    return role


def qualified_role(qual: str) -> Role | None:
    """The role of what calling the (canonical) qualified name ``qual`` builds, from the vocabulary."""
    if qual.startswith("torch.optim.") and not qual.startswith(torch_names.NOT_OPTIMIZER_PACKAGES):
        if qual.rsplit(".", 1)[-1][:1].isupper():
            return Role.OPTIMIZER
    # Schedules first: an optimizer's prefix may begin a schedule's name (`transformers.Adafactor`,
    # `transformers.AdafactorSchedule`).
    if _library_name(qual).startswith(torch_names.SCHEDULERS):
        return Role.SCHEDULER
    if qual.startswith(torch_names.THIRD_PARTY_OPTIMIZERS):
        # Told by the class's own name, not the package's: `schedulefree.AdamWScheduleFree` is an optimizer.
        last = qual.rsplit(".", 1)[-1].lower()
        return Role.SCHEDULER if "scheduler" in last or last.startswith("get_") else Role.OPTIMIZER
    if qual in torch_names.SCALERS:
        return Role.SCALER
    if qual.startswith("torch.nn."):
        last = qual.rsplit(".", 1)[-1]
        if last.endswith("Loss") or qual in torch_names.LOSS_ALIASES:
            return Role.CRITERION
        if last[:1].isupper() and qual.count(".") == 2 and last not in torch_names.NOT_MODEL_LAYERS:
            return Role.MODEL
    if qual.startswith(torch_names.MODEL_FACTORIES):
        return Role.MODEL
    if qual.startswith("transformers.") and qual.endswith(".from_pretrained"):
        return Role.MODEL
    return None


def class_role(ctx: FileContext, cls: ast.ClassDef) -> Role | None:
    """What the instances of a class of ``ctx``'s file are, from its bases (through bases in this file or
    another of the project)."""
    return ctx.shared(("class-role", cls), lambda: _class_role(ctx, cls, 0))


def _class_role(ctx: FileContext, cls: ast.ClassDef, depth: int) -> Role | None:
    if cls.name in module_classes(ctx):
        return Role.CRITERION if cls.name.endswith("Loss") else Role.MODEL
    if depth > 8:
        return None
    unknown = False
    for base in cls.bases:
        qual = ctx.qualname(base)
        if qual in torch_names.OPTIMIZER_BASES:
            return Role.OPTIMIZER
        if qual is not None and qual.startswith(torch_names.SCHEDULER_BASES):
            return Role.SCHEDULER
        found = resolve_class(ctx, base)
        if found is not None:  # a class of the project: what its own bases make it
            role = _class_role(*found, depth + 1)
            if role is not Role.OTHER:
                return role
        elif not (isinstance(base, ast.Name) and base.id in _PLAIN_BASES):
            unknown = True  # a base this file does not show: it may be anything
    return None if unknown else Role.OTHER


# Bases that make no torch object (`class WeightEMA(object):`).
_PLAIN_BASES = frozenset({"object", "ABC", "dict", "list", "Exception"})


def same_module(ctx: FileContext, expr: ast.AST) -> ast.AST | None:
    """What ``expr`` hands back as the very module it was given, for ``origins`` to look through:
    the receiver of a move, cast or mode switch (``net.to(device)``, ``net.eval()``), the model a
    wrapper keeps (``DDP(net)``, ``torch.compile(net)``); None for anything else."""
    found = method_call(expr)
    if found is not None and found[0] in torch_names.MODULE_SELF_RETURNING:
        return found[1]
    if isinstance(expr, ast.Call):
        return preserved_argument(ctx, expr)
    return None


def preserved_argument(ctx: FileContext, call: ast.Call) -> ast.AST | None:
    """The argument a wrapping call hands back as the same model (``DDP(model)``,
    ``torch.compile(model)``), or None when ``call`` is no such wrapper."""
    if not call.args:
        return None
    func = call.func
    if ctx.call_qualname(call) in torch_names.MODEL_WRAPPERS or (
        isinstance(func, ast.Name) and func.id in torch_names.MODEL_WRAPPER_NAMES
    ):
        return call.args[0]
    return None


def is_prepare_call(call: ast.Call) -> bool:
    """``accelerator.prepare(a, b)`` and the like: the results are the arguments, in order."""
    return isinstance(call.func, ast.Attribute) and call.func.attr in torch_names.PREPARE_METHODS


def prepared_element(source: ast.AST, index: int) -> ast.AST | None:
    """Element ``index`` of what a ``prepare``-like call returns, which is its argument ``index``
    (``model, optimizer = amp.initialize(model, optimizer)``); None for any other call."""
    if isinstance(source, ast.Call) and is_prepare_call(source) and index < len(source.args):
        return source.args[index]
    return None


def optimizer_holds_state(ctx: FileContext, call: ast.Call) -> bool:
    """Whether the optimizer ``call`` builds can hold state about parameters (momentum, moments,
    step counts): what is lost when it is built again. A torch or library optimizer is always
    given parameters. A class of the project cannot when its ``step`` does nothing (its body only
    ``pass``, ``None``, a docstring, a bare ``return``), nor when it is built with no argument
    and its ``__init__`` takes none and never reaches a base ``__init__`` (``Optimizer.__init__``
    is what files parameters into ``param_groups``): a stand-in passed where an optimizer is
    expected (an evaluation pass of a shared ``run_epoch``). An optimizer whose state hangs on one
    setting (``torch.optim.SGD`` keeps a momentum buffer only when ``momentum`` is not 0) cannot
    when that setting is left out or 0, unless a learning-rate scheduler is built over it (the
    schedule is then what a rebuilt one loses)."""
    switch = torch_names.STATE_SWITCHES.get(ctx.call_qualname(call) or "")
    if switch is not None:
        return _switched_on(call, *switch) or _scheduled(ctx, call)
    found = resolve_class(ctx, call.func)
    if found is None:
        return True
    cls = Definition(*found)
    if _steps_nothing(cls):
        return False
    if call.args or call.keywords:
        return True
    init = find_method(cls, "__init__")
    if init is None:
        return True  # `Optimizer.__init__(params, defaults)`, which needs the parameters
    args = init.node.args  # type: ignore[union-attr]
    takes_arguments = len(args.posonlyargs + args.args) > 1 or args.vararg or args.kwonlyargs or args.kwarg
    return bool(takes_arguments) or any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__"
        for node in ast.walk(init.node)
    )


def _switched_on(call: ast.Call, keyword: str, position: int) -> bool:
    """The setting that gives the optimizer state (``momentum``) may be on: given, and not shown to be
    0 (a literal), or hidden in ``*args`` / ``**kwargs``."""
    given = [k.value for k in call.keywords if k.arg in (keyword, None)]
    given += call.args[position : position + 1]
    if any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
        return True
    return any(not (isinstance(v, ast.Constant) and v.value == 0) for v in given)


def _scheduled(ctx: FileContext, call: ast.Call) -> bool:
    """A learning-rate scheduler is built over the optimizer ``call`` builds: its schedule is state
    that a rebuilt optimizer leaves behind."""
    flow = dataflow(ctx)
    for other in ctx.calls:
        if other is call or constructor_role(ctx, other) != Role.SCHEDULER:
            continue
        for arg in [*other.args, *(k.value for k in other.keywords)]:
            if arg is call or (isinstance(arg, (ast.Name, ast.Attribute)) and call in flow.origins(arg)):
                return True
    return False


def defines_own_step(ctx: FileContext, call: ast.Call) -> bool:
    """Whether ``call`` builds an instance of a project class that defines ``step()`` itself (in it or
    a project base): its ``step`` is the project's, with the project's contract (a warm-up schedule
    meant to step at the start of an epoch), not the one of the torch base it derives from. A class
    that only overrides ``get_lr()`` keeps torch's ``step()`` and its contract."""
    found = resolve_class(ctx, call.func)
    return found is not None and _steps_itself(found)


def _steps_itself(found: tuple[FileContext, ast.ClassDef]) -> bool:
    """The class (or a project base of it) defines ``step()``."""
    return find_method(Definition(*found), "step") is not None


def _steps_nothing(cls: Definition) -> bool:
    step = find_method(cls, "step")
    return step is not None and does_nothing(step.node)  # type: ignore[arg-type]


def _library_name(qual: str) -> str:
    """``qual`` in the terms of a library copied inside the project's own package
    (``mypkg.pytorch_transformers.WarmupLinearSchedule`` is ``pytorch_transformers.WarmupLinearSchedule``)."""
    parts = qual.split(".")
    for i, part in enumerate(parts[1:], 1):
        if part in torch_names.VENDORED_LIBRARIES:
            return ".".join(parts[i:])
    return qual
