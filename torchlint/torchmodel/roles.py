"""What an object is in training code: a model, an optimizer, a scheduler, a gradient scaler, a criterion.

``object_roles(ctx)`` answers, once per file:

* ``constructor_role(call)``: the role of the object a call builds (``torch.optim.AdamW(...)``,
  ``nn.CrossEntropyLoss()``, ``timm.create_model(...)``, an ``nn.Module`` class of the file);
* ``roles``: symbol -> role, from every assignment in the file (constructors, wrappers such as
  ``DDP(model)`` and ``model.cuda()``, ``accelerator.prepare``-style unpacking; the last binding
  of a symbol wins);
* ``expr_role(expr)`` / ``role_of(expr_or_symbol)``: the role of a value, then, as a last resort,
  the role its conventional name suggests (``self.optimizer``, ``opt_g``, ``netG``);
* ``optimizer_models``: optimizer symbol -> the models whose ``.parameters()`` built it.
"""

from __future__ import annotations

import ast
import re
from enum import Enum
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import local_base
from torchlint.analysis.dataflow import argument
from torchlint.analysis.imports import dotted_name, symbol
from torchlint.analysis.nodes import walk_function_body, walk_no_scopes
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


_NAME_HINTS = (
    (re.compile(r"(^|_)sched(uler)?s?($|_)|lr_scheduler|scheduler", re.I), Role.SCHEDULER),
    (re.compile(r"scaler$", re.I), Role.SCALER),
    (re.compile(r"(^|_)(optim|optimi[sz]er|opt)s?($|_)|optimi[sz]er", re.I), Role.OPTIMIZER),
    # GAN code names its pairs optG/optD, optimD, netG/netD (case matters: `options` is no optimizer).
    (re.compile(r"^opt(im)?[A-Z]"), Role.OPTIMIZER),
    (re.compile(r"(^|_)(model|net|network|module)s?($|_)", re.I), Role.MODEL),
    (re.compile(r"^net[A-Z]"), Role.MODEL),
    (re.compile(r"(criterion|loss_fn|loss_func|lossfn)", re.I), Role.CRITERION),
)


@lru_cache(maxsize=4096)  # a pure function of the name; the same few names are asked about often
def role_from_name(name: str) -> Role | None:
    """Guess a role from a conventional name (last attribute only: ``self.optimizer`` -> optimizer)."""
    last = name.rsplit(".", 1)[-1]
    for pattern, role in _NAME_HINTS:
        if pattern.search(last):
            return role
    return None


def is_prepare_call(call: ast.Call) -> bool:
    """``accelerator.prepare(a, b)`` and the like: the results are the arguments, in order."""
    return isinstance(call.func, ast.Attribute) and call.func.attr in torch_names.PREPARE_METHODS


class ObjectRoles:
    """The roles of the objects of one file; get the shared instance with ``object_roles(ctx)``."""

    def __init__(self, ctx: FileContext):
        self.ctx = ctx

    def constructor_role(self, call: ast.Call) -> Role | None:
        """The role of the object a call constructs, if the call is a known constructor."""
        # Shared per call: roles, several rules and the run model ask about the same calls.
        return self.ctx.shared(("constructor-role", call), lambda: self._constructor_role(call))

    def _constructor_role(self, call: ast.Call) -> Role | None:
        ctx = self.ctx
        qual = ctx.call_qualname(call)
        if qual:
            if qual.startswith("torch.optim.") and not qual.startswith(torch_names.NOT_OPTIMIZER_PACKAGES):
                last = qual.rsplit(".", 1)[-1]
                if last[:1].isupper():
                    return Role.OPTIMIZER
            if qual.startswith(torch_names.THIRD_PARTY_OPTIMIZERS):
                return Role.SCHEDULER if "schedul" in qual.lower() else Role.OPTIMIZER
            if qual.startswith(torch_names.SCHEDULERS):
                return Role.SCHEDULER
            if qual in torch_names.SCALERS:
                return Role.SCALER
            if qual.startswith("torch.nn."):
                last = qual.rsplit(".", 1)[-1]
                if last.endswith("Loss"):
                    return Role.CRITERION
                if last[:1].isupper() and qual.count(".") == 2 and last not in torch_names.NOT_MODEL_LAYERS:
                    return Role.MODEL
            if qual.startswith(torch_names.MODEL_FACTORIES):
                return Role.MODEL
            if qual.startswith("transformers.") and qual.endswith(".from_pretrained"):
                return Role.MODEL
        func = call.func
        if isinstance(func, ast.Name) and func.id in module_classes(ctx):
            return Role.MODEL
        if isinstance(func, ast.Attribute) and func.attr == "from_pretrained":
            base = dotted_name(func.value) or ""
            if base.rsplit(".", 1)[-1].startswith("Auto") and "Tokenizer" not in base and "Config" not in base:
                return Role.MODEL
        return None

    @cached_property
    def roles(self) -> dict[str, Role]:
        """Symbol -> role, from every assignment in the file (last binding wins per symbol)."""
        roles: dict[str, Role] = {}
        for node in self.ctx.nodes(ast.Assign, ast.AnnAssign):
            value = node.value
            if value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                self._bind(target, value, roles)
        return roles

    def _bind(self, target: ast.AST, value: ast.AST, roles: dict[str, Role]) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, ast.Call) and is_prepare_call(value):
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

    def expr_role(self, expr: ast.AST, roles: dict[str, Role] | None = None) -> Role | None:
        """The role of the value an expression evaluates to, when it can be told."""
        if roles is None:
            roles = self.roles
        if isinstance(expr, ast.Call):
            role = self.constructor_role(expr)
            if role:
                return role
            func = expr.func
            wrapped = preserved_argument(self.ctx, expr)
            if wrapped is not None:
                return self.expr_role(wrapped, roles)
            if isinstance(func, ast.Attribute) and func.attr in torch_names.MODULE_SELF_RETURNING:
                return self.expr_role(func.value, roles)
            if is_prepare_call(expr) and len(expr.args) == 1:
                return self.expr_role(expr.args[0], roles)
            return None
        key = symbol(expr)
        if key is None:
            return None
        return roles.get(key)

    def role_of(self, expr_or_symbol) -> Role | None:
        """Role of a symbol or expression: from assignments, then from its conventional name."""
        key = expr_or_symbol if isinstance(expr_or_symbol, str) else symbol(expr_or_symbol)
        if key is None:
            return self.expr_role(expr_or_symbol) if isinstance(expr_or_symbol, ast.AST) else None
        role = self.roles.get(key)
        if role:
            return role
        return role_from_name(key.split("[", 1)[0])

    # ----- which models feed which optimizer ---------------------------------------------------------
    @cached_property
    def optimizer_models(self) -> dict[str, frozenset[str]]:
        """Optimizer symbol -> symbols of the models whose ``.parameters()`` it was built from
        (``optimizerD = Adam(netD.parameters())`` -> {"netD"}); absent when it cannot be told."""
        found: dict[str, frozenset[str]] = {}
        for node in self.ctx.nodes(ast.Assign):
            value = node.value
            if not (
                isinstance(value, ast.Call)
                and len(node.targets) == 1
                and self.constructor_role(value) == Role.OPTIMIZER
            ):
                continue
            key = symbol(node.targets[0])
            params = argument(value, 0, "params")
            if key is None or params is None:
                continue
            models = set()
            for sub in walk_no_scopes(params):
                if (
                    isinstance(sub, ast.Call)
                    and isinstance(sub.func, ast.Attribute)
                    and sub.func.attr in torch_names.PARAMETER_METHODS
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
            for ret in walk_function_body(configure):
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


def object_roles(ctx: FileContext) -> ObjectRoles:
    """The file's object roles, built the first time a rule asks and then shared."""
    return ctx.shared("roles", lambda: ObjectRoles(ctx))
