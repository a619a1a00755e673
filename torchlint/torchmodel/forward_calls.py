"""Which calls run a model forward, and where models switch between train and eval mode.

Shared by the evaluation analysis (TL005/TL006) and the restore analysis (TL007).
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import receiver_method
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.imports import symbol
from torchlint.analysis.project import member_names
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.calls import call_events
from torchlint.torchmodel.constructors import same_module
from torchlint.torchmodel.events import MODE_KINDS
from torchlint.torchmodel.frameworks import foreign_call
from torchlint.torchmodel.roles import Role, object_roles
from torchlint.torchmodel.unread_builders import built_by_unread_code

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext
    from torchlint.torchmodel.events import Event

_NOT_MODEL_HOLDER = re.compile(r"tokenizer|processor|config|feature_extractor|image_processor", re.I)
_MODEL_NAME = re.compile(
    r"^(?!(get|load|build|create|make|init|setup|save|to|from|is|has|named|set|update|wrap|unwrap|forward|call)_)"
    r"(([a-z]+_)?(model|net|network)s?(_(ema|ddp|without_ddp|eval|copy|g|d|a|b|\d+|engine|compiled|wrapped))?"
    r"|net[A-Z]\w*|([a-z]+_)?(backbone|encoder|decoder|classifier|generator|discriminator))$"
)


class ForwardCalls:
    """Model calls of one file: ``model(x)``, ``self.net(x)``, ``model.forward(x)``."""

    def __init__(self, ctx: FileContext):
        self.ctx = ctx

    def is_model_call(self, call: ast.Call) -> bool:
        return (
            self.is_model(model_expression(call))
            and not self.handed_a_model(call)
            and not self.builds_model(call)
            and not foreign_call(self.ctx, call)
        )

    def handed_a_model(self, call: ast.Call) -> bool:
        """``freeze_model(model)``: a forward takes tensors, so a callable taken for a model by its
        name alone and handed a model is a helper over models; whether it runs the model is its
        body's question (a helper of the project that does is a recording helper), and one the
        linter cannot read is no forward. A callable the code shows is a network stays one."""
        if object_roles(self.ctx).role_of(model_expression(call), hint=False) is Role.MODEL:
            return False  # shown a network by what the code does: its arguments are its inputs
        values = [*call.args, *(keyword.value for keyword in call.keywords)]
        return any(isinstance(value, (ast.Name, ast.Attribute)) and self.is_model(value) for value in values)

    def builds_model(self, call: ast.Call) -> bool:
        """Whether the value ``call`` returns is later used as a model (``model = configs.model()``
        ... ``model.eval()``, ``model(inputs)``): the call builds the model, a forward returns
        tensors. Only uses a tensor has no counterpart of count (``.to()``, ``.cuda()`` do not), but
        the value may reach the name through them (``model = net_fn(cfg).cuda()``, ``model =
        DDP(net_fn(cfg))``: what ``same_module`` hands back as the module it was given)."""
        value: ast.AST = call
        parent = self.ctx.parent(value)
        while True:
            outer = self.ctx.parent(parent) if isinstance(parent, ast.Attribute) else parent
            if not (isinstance(outer, ast.Call) and same_module(self.ctx, outer) is value):
                break
            value, parent = outer, self.ctx.parent(outer)
        if not (isinstance(parent, ast.Assign) and parent.value is value and len(parent.targets) == 1):
            return False
        key = symbol(parent.targets[0])
        if key is None:
            return False
        flow = dataflow(self.ctx)
        for receiver in _model_uses(self.ctx).get(key, ()):
            if call in flow.origins(receiver, through=lambda e: same_module(self.ctx, e)):
                return True
        return False

    def is_model(self, func: ast.AST) -> bool:
        """Whether the object ``func`` names is a model (by what the code shows, else its name)."""
        if not isinstance(func, (ast.Name, ast.Attribute, ast.Subscript)):
            return False
        # Several analyses ask about the same call; the answer is a fact of the file, kept per node.
        answers = self.ctx.shared("model-expressions", dict)
        answer = answers.get(id(func))
        if answer is None:
            answer = answers[id(func)] = self._is_model(func)
        return answer

    def _is_model(self, func: ast.Name | ast.Attribute | ast.Subscript) -> bool:
        ctx = self.ctx
        if isinstance(func, ast.Name) and (func.id in ctx.classes or func.id in ctx.functions):
            return False
        root = _root(func)
        if root is not None and dataflow(ctx).names_import(root):
            # `open_clip.list_models()`, `hub.model(...)`: a library's function or class; not a name
            # rebound to a value since (`model = model.RNNModel(...)` ... `model.decoder(h)`)
            return False
        key = symbol(func)
        if key is None:
            return False
        last = key.rsplit(".", 1)[-1].split("[", 1)[0]
        if _NOT_MODEL_HOLDER.search(last):
            return False  # `self.tokenizer(...)`: a from_pretrained object that is no network
        if receiver_method(ctx, func) is not None:
            return False  # `self.restore_model(...)` in a class defining it: a method, whatever its name
        role = object_roles(ctx).role_of(func, hint=False)
        if role is not None:
            model = role is Role.MODEL  # what the code shows the object is, whatever its name
        else:
            # Conventional names only when the whole last name says "model" (`self.model`, `net_g`,
            # `model_ema`, `models[i]`), not a method that mentions one (`load_model`, `named_modules`),
            # and not for an object built by code the linter cannot read and used as nothing more than
            # a callable (`iqa_model = create_metric(...)`: a metric may run its network under no-grad).
            model = bool(_MODEL_NAME.match(last)) and not built_by_unread_code(ctx, func)
        # `self.model.evaluate_model(step)`: the project's classes define `evaluate_model` as a
        # method and never store an attribute so named, and the receiver is not shown to be a
        # network (on one, `model.encoder(x)` is a method that runs its layers: a forward). Asked
        # last, only where it can change the answer: it reads every file of the project once.
        return model and not (
            isinstance(func, ast.Attribute)
            and member_names(ctx).only_method(func.attr)
            and object_roles(ctx).role_of(func.value, hint=False) is not Role.MODEL
        )

    def within(self, spans: list[tuple[int, int]]) -> list[ast.Call]:
        """Model calls inside the given line spans (cheap spans first: most files have none)."""
        if not spans:
            return []
        found = []
        for call in self.ctx.calls:
            if isinstance(call.func, (ast.Name, ast.Attribute, ast.Subscript)) and within_spans(call, spans):
                if self.is_model_call(call):
                    found.append(call)
        return found


def _model_uses(ctx: FileContext) -> dict[str, list[ast.AST]]:
    """Symbol -> the expressions of the file used the way only a model is: called
    (``model(inputs)``) or asked for what only a module has (``.eval()``, ``.parameters()``,
    ``.load_state_dict(...)``)."""

    def build() -> dict[str, list[ast.AST]]:
        found: dict[str, list[ast.AST]] = {}
        for call in ctx.calls:
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr in torch_names.MODULE_ONLY_METHODS:
                receiver = func.value
            elif isinstance(func, (ast.Name, ast.Attribute)) and call.args:
                receiver = func
            else:
                continue
            key = symbol(receiver)
            if key is not None:
                found.setdefault(key, []).append(receiver)
        return found

    return ctx.shared("model-uses", build)


def _root(expr: ast.AST) -> ast.Name | None:
    while isinstance(expr, (ast.Attribute, ast.Subscript)):
        expr = expr.value
    return expr if isinstance(expr, ast.Name) else None


def model_expression(call: ast.Call) -> ast.AST:
    """The model a call runs: ``model`` for ``model(x)`` and ``model.forward(x)``."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "forward":
        return func.value
    return func


# Methods that may switch a module's mode: a LightningModule's `freeze()` / `unfreeze()` too.
_MODE_METHODS = frozenset({"eval", "train", torch_names.LIGHTNING_FREEZE_METHOD, torch_names.LIGHTNING_UNFREEZE_METHOD})


def mode_switches(ctx: FileContext) -> list[Event]:
    """Every `.eval()`, `.train()`, `.train(False)` call of the file (and a LightningModule's
    `.freeze()` / `.unfreeze()`), as events."""

    def build() -> list:
        found = []
        for call in ctx.calls:
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr in _MODE_METHODS:
                event = call_events(ctx).classify(call)
                if event is not None and event.kind in MODE_KINDS:
                    found.append(event)
        return found

    return ctx.shared("mode-switches", build)


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


def within_spans(node: ast.AST, spans: list[tuple[int, int]]) -> bool:
    """Whether ``node`` starts on a line inside one of the line spans."""
    line = node.lineno
    return any(start <= line <= end for start, end in spans)


def is_forward_output(ctx: FileContext, expr: ast.AST) -> bool:
    """Whether every value ``expr`` may hold is shown to be what a model call returns (``y = model(x)``):
    a tensor, not an object with methods of its own (an accelerator, an engine)."""
    origins = dataflow(ctx).origins(expr)
    forward = ForwardCalls(ctx)
    return bool(origins) and all(isinstance(o, ast.Call) and forward.is_model_call(o) for o in origins)


def backward_with_gradient(ctx: FileContext, call: ast.AST) -> bool:
    """``y.backward(dy)`` on a model's output: the argument is the gradient flowing into ``y`` (an
    upstream gradient a test or a pipeline stage hands in), not a loss; ``accelerator.backward(loss)``
    passes a loss to an object that is no tensor."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "backward"):
        return False
    has_gradient = bool(call.args) or any(kw.arg == "gradient" for kw in call.keywords)
    return has_gradient and is_forward_output(ctx, call.func.value)
