"""Which classes of a file are torch modules: ``nn.Module`` subclasses, through bases defined in the
file or, with a project, in another file its imports reach (``class Generator(BaseNet)`` with
``BaseNet`` in ``models/base.py``)."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import find_method, receiver_class, resolve_class, resolve_local_call
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.definitions import Definition
from torchlint.analysis.imports import dotted_name
from torchlint.analysis.nodes import argument, argument_for, method_call
from torchlint.analysis.summaries import function_summary
from torchlint.torchmodel import vocabulary as torch_names

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext


# Package names where projects keep their network building blocks (`fairseq.modules`,
# `timm.layers`, `.models.blocks`, `mmcv.cnn`): a class imported from one is taken for a layer.
LAYER_PACKAGES = frozenset(
    {"modules", "module", "layers", "layer", "nn", "models", "model", "blocks", "networks", "network", "cnn"}
)
_NOT_LAYERS = re.compile(r"(Loss|Criterion|Metric|Metrics|Config|Tokenizer|Dataset|Loader|Sampler)$")


def imported_layer_class(ctx: FileContext, call: ast.Call) -> str | None:
    """The qualified name when ``call`` instantiates a class imported from a package of network
    layers of another project or file (``FairseqDropout(p)`` from ``fairseq.modules``,
    ``Block(dim)`` from ``.models.blocks``); None otherwise (torch's own classes included)."""
    qual = ctx.call_qualname(call)
    if not qual or qual.startswith("torch."):
        return None
    *package, name = qual.lstrip(".").split(".")
    if not name[:1].isupper() or _NOT_LAYERS.search(name) or not LAYER_PACKAGES & set(package):
        return None
    return qual


def module_classes(ctx: FileContext) -> frozenset[str]:
    """Names of classes in this file that derive (transitively) from ``nn.Module``."""
    return ctx.shared(
        "module_classes",
        lambda: _derived_classes(
            ctx, torch_names.MODULE_BASES, torch_names.MODULE_BASE_SPELLINGS, "torch.module-class", module_classes
        ),
    )


def lightning_module_classes(ctx: FileContext) -> frozenset[str]:
    """Names of classes in this file that derive (transitively) from Lightning's ``LightningModule``."""
    return ctx.shared(
        "lightning_module_classes",
        lambda: _derived_classes(
            ctx,
            torch_names.LIGHTNING_MODULE_BASES,
            torch_names.LIGHTNING_MODULE_SPELLINGS,
            "torch.lightning-module-class",
            lightning_module_classes,
        ),
    )


def _derived_classes(ctx: FileContext, bases, spellings, kind: str, classes_of) -> frozenset[str]:
    """Classes of this file deriving from one of ``bases`` (qualified names; ``spellings`` when the
    import cannot be resolved), through bases of this file or, with a project, of another file
    (asked there through ``classes_of``, once per run under the summary ``kind``)."""
    found: set[str] = set()
    elsewhere: dict[ast.expr, bool] = {}
    changed = True
    while changed:
        changed = False
        for name, cls in ctx.classes.items():
            if name in found:
                continue
            for base in cls.bases:
                qual = ctx.qualname(base)
                local = dotted_name(base)
                if (
                    (qual and qual in bases)
                    or (local in found)
                    or (qual is None and local in spellings)
                    or (local not in ctx.classes and _class_elsewhere(ctx, base, elsewhere, kind, classes_of))
                ):
                    found.add(name)
                    changed = True
                    break
    return frozenset(found)


def _class_elsewhere(ctx: FileContext, base: ast.expr, memo: dict[ast.expr, bool], kind: str, classes_of) -> bool:
    """Whether ``base`` names a class of another file of the project that ``classes_of`` lists, asked
    in that file once per run (in an import cycle, a class asked for while it is being answered is
    not yet one)."""
    if ctx.project is None:
        return False
    if base not in memo:
        found = resolve_class(ctx, base)
        memo[base] = (
            found is not None
            and found[0] is not ctx
            and function_summary(Definition(*found), kind, lambda d: d.name in classes_of(d.ctx), False)
        )
    return memo[base]


def is_lightning_module(ctx: FileContext, expr: ast.AST) -> bool:
    """Whether ``expr`` holds a Lightning ``LightningModule``: a parameter annotated with such a class,
    or a value every origin of which (through moves, and parameters to what every call site in this
    file passes) builds an instance of one (``LitModel(...)``,
    ``LitModel.load_from_checkpoint(path)``). Any other object with a ``freeze`` method is not."""
    if isinstance(expr, ast.Name) and _annotated_lightning(ctx, expr):
        return True
    moved = lambda e: found[1] if (found := method_call(e)) and found[0] in torch_names.MODULE_SELF_RETURNING else None  # noqa: E731
    origins = dataflow(ctx).origins(expr, through=moved, parameters=True)
    return bool(origins) and all(_builds_lightning_module(ctx, origin) for origin in origins)


def lightning_mode_method(ctx: FileContext, call: ast.Call) -> str | None:
    """``"freeze"``/``"unfreeze"`` for ``m.freeze()``/``m.unfreeze()`` where ``m`` holds a
    LightningModule (``is_lightning_module``); None for any other call, another object's ``freeze``
    included."""
    func = call.func
    if not (
        isinstance(func, ast.Attribute)
        and func.attr in (torch_names.LIGHTNING_FREEZE_METHOD, torch_names.LIGHTNING_UNFREEZE_METHOD)
    ):
        return None
    return func.attr if is_lightning_module(ctx, func.value) else None


def _builds_lightning_module(ctx: FileContext, origin: ast.AST | None) -> bool:
    if not isinstance(origin, ast.Call):
        return False
    func = origin.func
    if isinstance(func, ast.Attribute) and func.attr == torch_names.LIGHTNING_CHECKPOINT_LOADER:
        func = func.value
    return _names_lightning_class(ctx, func)


def _names_lightning_class(ctx: FileContext, expr: ast.AST) -> bool:
    qual = ctx.qualname(expr)
    if qual is not None and qual in torch_names.LIGHTNING_MODULE_BASES:
        return True
    if qual is None and dotted_name(expr) in torch_names.LIGHTNING_MODULE_SPELLINGS:
        return True
    cls = resolve_class(ctx, expr)
    return cls is not None and cls[1].name in lightning_module_classes(cls[0])


def _annotated_lightning(ctx: FileContext, name: ast.Name) -> bool:
    """``name`` is, wherever it is read here, a parameter annotated with a LightningModule class."""
    bindings = dataflow(ctx).reaching(name)
    return bool(bindings) and all(
        b.kind == "param"
        and isinstance(b.stmt, ast.arg)
        and b.stmt.annotation is not None
        and _names_lightning_class(ctx, b.stmt.annotation)
        for b in bindings
    )


def module_forward(ctx: FileContext, call: ast.Call) -> Definition | None:
    """The ``forward`` that ``call`` runs when it calls an instance of a torch module class of the
    project (``criterion = DetectionLoss(); criterion(pred, targets)``: ``nn.Module.__call__`` runs
    ``forward``); None when any value the callee may hold is something else, or the class defines
    its own ``__call__``."""
    found = None
    for origin in dataflow(ctx).origins(call.func):
        cls = resolve_class(ctx, origin.func) if isinstance(origin, ast.Call) else None
        if cls is None or cls[1].name not in module_classes(cls[0]):
            return None
        definition = Definition(*cls)
        if find_method(definition, "__call__") is not None:
            return None
        method = find_method(definition, "forward")
        if method is None or (found is not None and method != found):
            return None
        found = method
    return found


def module_forwards(ctx: FileContext, call: ast.Call) -> list[Definition] | None:
    """Every ``forward`` that ``call`` may run, one per project module class its callee may be an
    instance of, also through a move (``Loss().cuda()``) and a parameter fed by every call site of
    its function in this file (``train(loader, model, criterion)``, the criterion picked by an
    option); None when any value the callee may hold is something else."""
    moved = lambda e: found[1] if (found := method_call(e)) and found[0] in torch_names.MODULE_SELF_RETURNING else None  # noqa: E731
    forwards: list[Definition] = []
    for origin in dataflow(ctx).origins(call.func, through=moved, parameters=True):
        cls = resolve_class(ctx, origin.func) if isinstance(origin, ast.Call) else None
        if cls is None or cls[1].name not in module_classes(cls[0]):
            return None
        definition = Definition(*cls)
        method = find_method(definition, "forward")
        if method is None or find_method(definition, "__call__") is not None:
            return None
        if method not in forwards:
            forwards.append(method)
    return forwards or None


def never_a_module(ctx: FileContext, expr: ast.AST) -> bool:
    """Every value ``expr`` may hold is an instance of a project class shown not to be a torch
    module (``env = Env(args)`` with ``class Env:``): its ``eval()``/``train()`` are methods of its
    own (an environment's evaluation flag), not a switch of train/eval mode. A value that cannot be
    told, or a class with a base the linter cannot read, may be a module."""
    owner = receiver_class(ctx, expr)
    if owner is not None:
        return _plain_class(Definition(ctx, owner))  # `self.train(batch)` in a method of a plain class
    origins = dataflow(ctx).origins(expr, parameters=True)
    return bool(origins) and all(isinstance(o, ast.Call) and _plain_class_call(ctx, o) for o in origins)


def _plain_class_call(ctx: FileContext, call: ast.Call) -> bool:
    found = resolve_class(ctx, call.func)
    return found is not None and _plain_class(Definition(*found))


def _plain_class(definition: Definition) -> bool:
    """A class each of whose bases is ``object`` or a project class that is plain itself (asked once
    per run; in a cycle, not plain)."""

    def compute(d: Definition) -> bool:
        for base in d.node.bases:
            if dotted_name(base) == "object":
                continue
            found = resolve_class(d.ctx, base)
            if found is None or not _plain_class(Definition(*found)):
                return False
        return d.name not in module_classes(d.ctx)

    return function_summary(definition, "torch.plain-class", compute, False)


def installs_as_attribute(ctx: FileContext, call: ast.Call, value: ast.AST, depth: int = 0) -> bool:
    """Whether ``call`` sets ``value`` as an attribute of some object, which registers a module
    there: ``setattr(obj, name, value)``, ``obj.add_module(name, value)`` /
    ``register_module``, the dunder spelled out (``self.__setattr__(name, value)``,
    ``nn.Module.__setattr__(self, name, value)``), or a function of this file whose parameter it
    passes ``value`` for does so in its body (``set_module_by_path(net, path, wrapper)``, a few
    calls deep)."""
    if isinstance(call.func, ast.Name) and call.func.id == "setattr":
        return argument(call, 2, "value") is value
    found = method_call(call)
    if found is not None and found[0] == torch_names.ATTRIBUTE_SETTING_METHOD:
        return _setattr_value(ctx, call, found[1]) is value
    if found is not None and found[0] in torch_names.PARAMETER_REGISTERING_METHODS:
        return argument(call, 1, "module") is value or argument(call, 1, "param") is value
    func = resolve_local_call(ctx, call)
    if func is None or depth >= _MAX_INSTALL_DEPTH:
        return False
    params = [a.arg for a in func.args.posonlyargs + func.args.args + func.args.kwonlyargs]
    handed = next((p for p in params if argument_for(call, func, p) is value), None)
    if handed is None:
        return False
    return any(
        isinstance(arg, ast.Name) and arg.id == handed and installs_as_attribute(ctx, inner, arg, depth + 1)
        for inner in ast.walk(func)
        if isinstance(inner, ast.Call)
        for arg in [*inner.args, *(k.value for k in inner.keywords)]
    )


_MAX_INSTALL_DEPTH = 3


def _setattr_value(ctx: FileContext, call: ast.Call, owner: ast.AST) -> ast.AST | None:
    """The value ``owner.__setattr__(...)`` installs with registration: its third argument when
    called through a torch module class (``nn.Module.__setattr__(self, name, value)``), its second
    when called on an object (``self.``, ``super().``, ``self.body.``); None when called through
    any other class (``object.__setattr__`` sets the attribute without registering the module) or
    an imported name the linter cannot tell from one."""
    local = dotted_name(owner)
    qual = ctx.qualname(owner)
    if (
        (qual is not None and qual in torch_names.MODULE_BASES)
        or (qual is None and local in torch_names.MODULE_BASE_SPELLINGS)
        or local in module_classes(ctx)
    ):
        return argument(call, 2, "value")
    if qual is not None or local == "object" or local in ctx.classes:
        return None
    return argument(call, 1, "value")
