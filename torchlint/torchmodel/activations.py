"""Which values are outputs of an output activation (softmax, log_softmax, sigmoid), and
which loss calls receive them.

Shared by the rules about a loss that applies an activation itself being fed a value
that already went through it (TL012 softmax into cross-entropy, TL020 sigmoid into
BCE-with-logits). An activation is recognised as a function (``F.softmax(x, 1)``,
``torch.sigmoid(x)``), a method (``x.softmax(-1)``), a module instance
(``self.act = nn.Sigmoid()`` ... ``self.act(x)``), an ``nn.Sequential`` whose last
layer is one, or a model class whose ``forward`` always returns one, or a function that always
returns one (of this file, or of another file of the project: read in that file).
Values are followed through names and ``self`` attributes (``dataflow``) and
through shape-only operations (``.view``, ``.squeeze``, ``[..]``, ``.float()``,
``clamp``). Precision first: a value counts only when *every* way it can be
produced goes through the activation (``if self.training: return logits`` in a
forward makes the model's output unknown, hence silent).
"""

from __future__ import annotations

import ast
import os
import pathlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from torchlint.analysis.callgraph import call_graph, resolve_callee, resolve_class
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.nodes import argument, last_name, method_call, returns_of
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.constructors import same_module
from torchlint.torchmodel.modules import module_classes

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext


@dataclass(frozen=True)
class Activation:
    kind: str
    functions: frozenset[str]  # qualified names of functions taking the tensor first
    methods: frozenset[str]  # tensor methods
    modules: frozenset[str]  # qualified names of module classes


ACTIVATIONS = {
    kind: Activation(
        kind,
        torch_names.ACTIVATION_FUNCTIONS[kind],
        torch_names.ACTIVATION_METHODS[kind],
        torch_names.ACTIVATION_MODULES[kind],
    )
    for kind in torch_names.ACTIVATION_FUNCTIONS
}

# Operations that change only shape, dtype, device or range, not what the values mean.
TRANSPARENT_METHODS = frozenset(
    {
        "view",
        "reshape",
        "squeeze",
        "unsqueeze",
        "flatten",
        "contiguous",
        "float",
        "double",
        "half",
        "to",
        "cuda",
        "cpu",
        "permute",
        "transpose",
        "view_as",
        "reshape_as",
        "clamp",
        "clip",
        "type_as",
    }
)
TRANSPARENT_FUNCTIONS = frozenset({"torch.clamp", "torch.clip", "torch.squeeze", "torch.flatten", "torch.reshape"})


class Output(NamedTuple):
    """A value's output activation: its ``kind``, and the ``node`` that applies it (an activation
    call, or the activation layer inside the model called) in the file at ``path``, which is another
    file of the project when the model or function that applies it is defined there."""

    kind: str
    node: ast.AST
    path: str


@dataclass(frozen=True)
class ActivationInput:
    """A loss call whose input is the output of an activation."""

    loss: ast.Call
    input: ast.AST
    kind: str  # the activation kind
    producer: ast.AST  # the activation call, or the activation layer inside the model called
    producer_path: str  # the file the producer is written in

    def producer_place(self, ctx: FileContext) -> str:
        """Where the producer is, for a message about ``ctx``'s file: ``line 12``, or
        ``models.py:12`` in another file (relative to the linted file's folder)."""
        line = self.producer.lineno
        if self.producer_path == ctx.path:
            return f"line {line}"
        where = os.path.relpath(self.producer_path, os.path.dirname(os.path.abspath(ctx.path)))
        return f"{pathlib.PurePath(where).as_posix()}:{line}"


class ActivationTracker:
    MAX_DEPTH = 6

    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self.flow = dataflow(ctx)
        self._class_outputs: dict[str, Output | None] = {}

    # ----- objects (modules, losses) ------------------------------------------------------
    def constructors(self, expr: ast.AST) -> list[str | None]:
        """Qualified class names of the objects ``expr`` may hold (None: unknown)."""
        names: list[str | None] = []
        for origin in self.flow.origins(expr, self._through_module_moves, parameters=True):
            if isinstance(origin, ast.Call):
                qual = self.ctx.call_qualname(origin)
                if qual is None and isinstance(origin.func, ast.Name) and origin.func.id in module_classes(self.ctx):
                    qual = "<local>." + origin.func.id
                names.append(qual)
                continue
            names.append(None)
        return names

    def _through_module_moves(self, expr: ast.AST) -> ast.AST | None:
        return same_module(self.ctx, expr)

    def module_output(self, callee: ast.AST, depth: int) -> Output | None:
        """The activation every object ``callee`` may hold applies last, if any."""
        results = []
        for origin in self.flow.origins(callee, self._through_module_moves, parameters=True):
            known = isinstance(origin, ast.Call) and origin not in self._rebuilt_objects()
            results.append(self._constructed_output(origin, depth) if known else None)
        return _all_same(results)

    def _rebuilt_objects(self) -> frozenset[ast.AST]:
        """Constructions whose layers the file replaces after building them
        (``model.classifier[-1] = nn.Identity()``, ``net.fc = nn.Linear(512, 1)``): what their
        ``forward`` returns is no longer what the class's own code says, so it is not judged."""

        def build() -> frozenset[ast.AST]:
            rebuilt = set()
            for assign in self.ctx.nodes(ast.Assign):
                if isinstance(assign.value, ast.Constant):
                    continue  # `model.training = False`, `net.name = "resnet"`: no layer replaced
                for target in assign.targets:
                    holder = _stored_into(target)
                    if holder is not None:
                        rebuilt.update(o for o in self.flow.origins(holder) if isinstance(o, ast.Call))
            return frozenset(rebuilt)

        return self.ctx.shared(("activations", "rebuilt objects"), build)

    def _constructed_output(self, call: ast.Call, depth: int) -> Output | None:
        qual = self.ctx.call_qualname(call)
        if qual is not None:
            for activation in ACTIVATIONS.values():
                if qual in activation.modules:
                    return Output(activation.kind, call, self.ctx.path)
            if qual == torch_names.SEQUENTIAL and call.args and not call.keywords:
                last = call.args[-1]
                if isinstance(last, ast.Starred):
                    return None
                if isinstance(last, ast.Call):
                    return self._constructed_output(last, depth + 1)
                return self.module_output(last, depth + 1)
            if qual.startswith("torch."):
                return None
        found = resolve_class(self.ctx, call.func)
        if found is not None and found[1].name in module_classes(found[0]):
            return activations(found[0]).class_output(found[1].name, depth + 1)
        return None

    def class_output(self, class_name: str, depth: int = 0) -> Output | None:
        """The activation a module class of this file applies to everything ``forward`` returns."""
        if class_name in self._class_outputs:
            return self._class_outputs[class_name]
        self._class_outputs[class_name] = None  # recursion guard
        forward = self._forward_of(self.ctx.classes.get(class_name))
        result = None
        if forward is not None and depth <= self.MAX_DEPTH:
            returns = returns_of(forward)
            if returns and all(r.value is not None for r in returns):
                result = _all_same([self.activation_of(r.value, depth + 1) for r in returns])
        self._class_outputs[class_name] = result
        return result

    def _forward_of(self, cls: ast.ClassDef | None, seen: int = 0) -> ast.AST | None:
        """The class's ``forward``, or the one it inherits from a class of this file."""
        if cls is None or seen > 8:
            return None
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "forward":
                return node
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in self.ctx.classes and base.id != cls.name:
                found = self._forward_of(self.ctx.classes[base.id], seen + 1)
                if found is not None:
                    return found
        return None

    # ----- values -------------------------------------------------------------------------
    def _through_transparent(self, expr: ast.AST) -> ast.AST | None:
        if isinstance(expr, ast.Subscript):
            return expr.value
        found = method_call(expr)
        if found is not None and found[0] in TRANSPARENT_METHODS and self.ctx.call_qualname(expr) is None:
            return found[1]
        if isinstance(expr, ast.Call) and expr.args and self.ctx.call_qualname(expr) in TRANSPARENT_FUNCTIONS:
            return expr.args[0]
        return None

    def activation_of(self, expr: ast.AST, depth: int = 0) -> Output | None:
        """(kind, producing node) when every origin of ``expr`` is the same activation's output."""
        if depth > self.MAX_DEPTH:
            return None
        unpacked = self._unpacked_from(expr)
        if unpacked is not None:
            return _all_same([self._element_output(call, index, depth) for call, index in unpacked])
        results = [
            self._origin_activation(origin, depth) if origin is not None else None
            for origin in self.flow.origins(expr, self._through_transparent, parameters=True)
        ]
        return _all_same(results)

    def _unpacked_from(self, expr: ast.AST) -> list[tuple[ast.Call, int]] | None:
        """``(call, position)`` of every assignment reaching a name when each unpacks a call's result
        (``real_pred, real_aux = discriminator(imgs)``); None otherwise."""
        if not isinstance(expr, ast.Name):
            return None
        bindings = self.flow.reaching(expr)
        if not bindings or any(
            b.kind != "unpack" or not isinstance(b.source, ast.Call) or b.index is None for b in bindings
        ):
            return None
        return [(b.source, b.index) for b in bindings]

    def _element_output(self, call: ast.Call, index: int, depth: int) -> Output | None:
        """The activation element ``index`` of what ``call`` returns went through: a module object of
        the file (its ``forward``) or a function of the project."""
        callee = resolve_callee(self.ctx, call)
        if callee is not None:
            return activations(callee[0]).returned_element(callee[1], index, depth + 1)
        results = []
        for origin in self.flow.origins(call.func, self._through_module_moves, parameters=True):
            found = resolve_class(self.ctx, origin.func) if isinstance(origin, ast.Call) else None
            forward = activations(found[0])._forward_of(found[1]) if found is not None else None
            results.append(
                activations(found[0]).returned_element(forward, index, depth + 1) if forward is not None else None
            )
        return _all_same(results)

    def returned_element(self, function: ast.AST, index: int, depth: int) -> Output | None:
        """The activation element ``index`` of every tuple a function of this file returns went through."""
        returns = returns_of(function)
        if not returns or depth > self.MAX_DEPTH:
            return None
        elements = [
            r.value.elts[index] if isinstance(r.value, (ast.Tuple, ast.List)) and index < len(r.value.elts) else None
            for r in returns
        ]
        return _all_same([self.activation_of(e, depth + 1) if e is not None else None for e in elements])

    def _origin_activation(self, origin: ast.AST, depth: int) -> Output | None:
        if not isinstance(origin, ast.Call):
            return None
        qual = self.ctx.call_qualname(origin)
        if qual is not None:
            for activation in ACTIVATIONS.values():
                if qual in activation.functions:
                    return Output(activation.kind, origin, self.ctx.path)
            return self._function_output(origin, depth)
        found = method_call(origin)
        if found is not None and not self._holds_assigned_object(origin.func):
            for activation in ACTIVATIONS.values():
                if found[0] in activation.methods:
                    return Output(activation.kind, origin, self.ctx.path)
        # `self(x)` inside a module's method (Lightning's training_step): its own forward.
        own_class = self._called_self(origin)
        if own_class is not None:
            return self.class_output(own_class, depth + 1)
        # Calling a module object: its last layer.
        output = self.module_output(origin.func, depth + 1)
        if output is not None:
            return output  # the activation inside the module: where the user should look
        return self._function_output(origin, depth)

    def _holds_assigned_object(self, func: ast.AST) -> bool:
        """``x.softmax`` of ``x.softmax(-1)`` is the tensor method unless the file assigns the
        attribute an object (``self.softmax = nn.LogSoftmax(dim=1)``): then the call runs that
        object, judged by its constructor, never by the attribute's name."""
        return any(o is not None and o is not func for o in self.flow.origins(func))

    def _function_output(self, call: ast.Call, depth: int) -> Output | None:
        """What a function of the project that ``call`` runs returns, when every ``return`` gives
        the same activation's output (``def predict(x): return F.softmax(net(x), 1)``); asked in the
        function's own file."""
        callee = resolve_callee(self.ctx, call)
        if callee is None or depth > self.MAX_DEPTH:
            return None
        return activations(callee[0]).returns_output(callee[1], depth + 1)

    def returns_output(self, function: ast.AST, depth: int = 0) -> Output | None:
        """The activation everything a function of this file returns goes through, if one does."""
        returns = returns_of(function)
        if not returns or any(r.value is None for r in returns) or depth > self.MAX_DEPTH:
            return None
        return _all_same([self.activation_of(r.value, depth + 1) for r in returns])

    def _called_self(self, call: ast.Call) -> str | None:
        """The module class name when ``call`` is ``self(...)`` in one of its methods."""
        func = call.func
        if not isinstance(func, ast.Name):
            return None
        method = self.ctx.enclosing_function(call)
        cls = self.ctx.parent(method) if method is not None else None
        if not isinstance(cls, ast.ClassDef) or cls.name not in module_classes(self.ctx):
            return None
        args = method.args.args
        return cls.name if args and args[0].arg == func.id else None

    # ----- losses -------------------------------------------------------------------------
    def loss_calls(self, functions: frozenset[str], modules: frozenset[str]) -> Iterator[ast.Call]:
        """Calls of the given loss functions, or of objects built from the given loss classes."""
        source = self.ctx.source
        if not any(q.rsplit(".", 1)[-1] in source for q in functions | modules):
            return  # cheap filter: every spelling, aliased or not, contains the last name part
        holders = self._names_bound_to(modules)
        for call in self.ctx.calls:
            qual = self.ctx.call_qualname(call)
            if qual is not None:
                if qual in functions:
                    yield call
                continue
            if not isinstance(call.func, (ast.Name, ast.Attribute, ast.Call)):
                continue
            if isinstance(call.func, ast.Call):
                kinds = [self.ctx.call_qualname(call.func)]
            elif last_name(call.func) not in holders:
                continue  # cheap filter: no assignment in the file could give it a loss object
            else:
                kinds = self.constructors(call.func)
            if kinds and all(k in modules for k in kinds):
                yield call

    def _names_bound_to(self, classes: frozenset[str]) -> set[str]:
        """Last name parts (``criterion``, ``loss_fn``) given an instance of ``classes`` anywhere: by an
        assignment, or as the argument for a parameter of a function of the file (``train(model,
        nn.CrossEntropyLoss())`` for ``def train(model, crit)``)."""
        names = set()
        ctx = self.ctx
        graph = call_graph(ctx)
        for call in ctx.calls:
            if ctx.call_qualname(call) not in classes:
                continue
            holder: ast.AST = call
            parent = ctx.parent(holder)
            while (
                isinstance(parent, ast.Attribute)
                and parent.attr in torch_names.DEVICE_DTYPE_MOVES
                and isinstance(ctx.parent(parent), ast.Call)
            ):
                holder = ctx.parent(parent)  # `nn.CrossEntropyLoss().to(device)`
                parent = ctx.parent(holder)
            if isinstance(parent, ast.Assign):
                names.update(filter(None, map(last_name, parent.targets)))
            elif isinstance(parent, ast.keyword) and parent.arg:
                names.add(parent.arg)
            elif isinstance(parent, ast.Call) and holder in parent.args:
                callee = graph.callee(parent)
                if callee is not None:
                    params = [a.arg for a in callee.args.posonlyargs + callee.args.args]
                    if params and params[0] in ("self", "cls") and isinstance(parent.func, ast.Attribute):
                        params = params[1:]
                    index = parent.args.index(holder)
                    if index < len(params):
                        names.add(params[index])
        return names

    def activation_inputs(
        self, kinds: frozenset[str], functions: frozenset[str], modules: frozenset[str]
    ) -> Iterator[ActivationInput]:
        """Loss calls (of ``functions``/``modules``) whose input is the output of one of ``kinds``."""
        for call in self.loss_calls(functions, modules):
            loss_input = argument(call, 0, "input")
            if loss_input is None:
                continue
            found = self.activation_of(loss_input)
            if found is not None and found[0] in kinds:
                yield ActivationInput(call, loss_input, found.kind, found.node, found.path)


def _stored_into(target: ast.AST) -> ast.Name | None:
    """The plain name whose object an assignment target changes inside (``model`` of
    ``model.classifier[-1] = ...``), other than ``self``: a class building itself is its definition."""
    if not isinstance(target, (ast.Attribute, ast.Subscript)):
        return None
    while isinstance(target, (ast.Attribute, ast.Subscript)):
        target = target.value
    return target if isinstance(target, ast.Name) and target.id != "self" else None


def _all_same(results: list) -> Output | None:
    if not results or any(r is None for r in results):
        return None
    kinds = {r[0] for r in results}
    return results[0] if len(kinds) == 1 else None


def activations(ctx: FileContext) -> ActivationTracker:
    """The file's shared :class:`ActivationTracker`."""
    return ctx.shared("activations", lambda: ActivationTracker(ctx))
