"""Whether a model is shown to compute differently in train and eval mode.

TL005 (evaluation in training mode) and TL007 (training mode not restored) only matter for a
model whose output depends on the mode: dropout, batch norm with its running statistics, a
forward that branches on ``self.training``. The question is answered positively or not at all:
a model is *shown* mode-dependent when data flow takes it to a construction that is

* a ``torch.nn`` layer that depends on the mode as built (``vocabulary.MODE_DEPENDENT_LAYERS``,
  a recurrent/attention layer given a non-zero ``dropout`` (a recurrent one with more than one
  layer: its dropout acts between stacked layers), an instance norm asked to
  ``track_running_stats``), or a container (``Sequential``, ``ModuleList``...) holding one;
* a class (of this file, or of the project where ``analysis.callgraph.resolve_class`` reaches
  it) whose body, a base, or a helper it calls to build its layers, builds one of those, uses a
  functional dropout or batch norm told a mode that is not a literal (``training=self.training``;
  told none, a dropout is on and batch norm uses its running statistics in both modes), or reads
  ``self.training``;
* a library constructor documented to build such a model (``vocabulary.MODE_DEPENDENT_CONSTRUCTORS``:
  torchvision's ResNets and friends, ``timm.create_model`` of a batch-norm family, a Hugging Face
  ``from_pretrained`` of a class whose default configuration has dropout);
* the return value of a function of the project that builds one of the above.

At one call of the model (``shown_at``) only the forward paths that call can take count: a class
whose mode-dependent layers are attributes that its ``forward`` runs only under a branch on a
forward parameter (``if is_training: h = self.dropout(h)``), decided against them by the call's
constant arguments or the parameter's default, computes the same in both modes at that call.

A parameter is followed to the arguments of its function's call sites in the file; for ``shown``
(TL007: a switch to eval inside this file's loop, whatever mode the model came in) also, for a
top-level function, to those of its callers in the project's other files, each judged in its own
file. ``shown_at`` (TL005) does not go there: the caller that builds the model also sets the mode
it arrives in, and only this file's callers are read for that. Anything
else (a class the linter cannot read, a model from an unknown caller, a layer of another
library) stays unknown, and the rules stay silent about it: a model of ``Linear``/``ReLU``
layers, an ``nn.RNN`` with the default dropout 0, a plain function, compute the same in both modes.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.callers import callers_elsewhere
from torchlint.analysis.callgraph import (
    call_graph,
    passes_unknown_arguments,
    receiver_class,
    resolve_callee,
    resolve_class,
    site_argument,
)
from torchlint.analysis.conditions import implies
from torchlint.analysis.containers import element_origins
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.definitions import FUNCTION_NODES, Definition, class_member
from torchlint.analysis.nodes import argument
from torchlint.analysis.summaries import function_summary
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.forward_calls import model_expression
from torchlint.torchmodel.phases import constants_passed, decided_off, runs_when_called
from torchlint.torchmodel.provenance import through_model_keeping

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

_MAX_DEPTH = 6
# What `ModeDependence._answer` may ask of a class or function: the method that answers it.
_QUESTIONS = {"class": "class_shown", "returns": "returns_shown", "builds": "builds"}


class ModeDependence:
    """``shown(expr)``: whether the model ``expr`` holds is shown to depend on train/eval mode."""

    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self.flow = dataflow(ctx)
        self._built: dict[object, bool] = {}  # a class, a function, or one judged under constants

    # ----- a model expression ------------------------------------------------------------------------
    def shown(self, expr: ast.AST, depth: int = 0) -> bool:
        """Some value the model ``expr`` may hold is mode-dependent (a model built on one branch
        with dropout is evaluated in training mode on that branch)."""
        if depth > _MAX_DEPTH:
            return False
        owner = receiver_class(self.ctx, expr)
        if owner is not None:
            # `self` in a method: an instance of its class or of a subclass of this file.
            return any(self.class_shown(cls, depth) for cls in (owner, *call_graph(self.ctx).subclasses(owner)))
        origins, passed_in = self._origins(expr)
        return any(self._origin_shown(o, depth) for o in origins) or any(self._passed_shown(p) for p in passed_in)

    def shown_at(self, call: ast.Call) -> bool:
        """``shown`` for the model ``call`` runs (``model(x)``, ``model.forward(x)``), judged on the
        forward paths that call can take: a model built by a class whose mode-dependent layers its
        ``forward`` runs only under branches this call decides against (``model(x)`` leaving
        ``is_training=False`` for ``if is_training: h = self.dropout(h)``) is not shown by it."""
        expr = model_expression(call)
        if receiver_class(self.ctx, expr) is not None:
            return self.shown(expr)
        # Not through a parameter filled only by callers in other files: such a caller also decides the
        # mode the model arrives in (``self.eval(); evaluate(self, data)``), which is read in this file only.
        origins, _ = self._origins(expr)
        return any(self._origin_shown(origin, 0) and not self._gated_off_at(origin, call) for origin in origins)

    def _gated_off_at(self, origin: ast.AST | None, call: ast.Call) -> bool:
        """``origin`` builds a class of this file, deriving from ``nn.Module`` only, with its own
        ``forward`` and no ``__call__``, every mode-dependent part of which is held by an attribute
        (``self.dropout = nn.Dropout(0.3)``) that the class reads only in ``forward``, at places
        ``call`` does not reach: a condition around each, on forward parameters, fails with the
        constants ``call`` passes for them (their defaults where it leaves them out)."""
        found = resolve_class(self.ctx, origin.func) if isinstance(origin, ast.Call) else None
        if found is None or found[0] is not self.ctx:
            return False
        cls = found[1]
        forward = class_member(cls, "forward")
        if not isinstance(forward, (ast.FunctionDef, ast.AsyncFunctionDef)) or class_member(cls, "__call__"):
            return False
        if not cls.bases or any(self.ctx.qualname(b) != "torch.nn.Module" for b in cls.bases):
            return False
        attributes = set()
        for node in ast.walk(cls):
            if self._node_builds(node, 1):
                attribute = self._held_by_attribute(node)
                if attribute is None:
                    return False  # `if self.training:`, `F.dropout(...)`, a layer built in forward
                attributes.add(attribute)
        reads = [
            node
            for node in ast.walk(cls)
            if isinstance(node, ast.Attribute)
            and node.attr in attributes
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ]
        return all(
            self.ctx.enclosing_function(read) is forward and not runs_when_called(self.ctx, call, forward, read, True)
            for read in reads
        )

    def _held_by_attribute(self, node: ast.AST) -> str | None:
        """``name`` when ``node`` lies in the value of a ``self.name = ...`` statement."""
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, ast.stmt):
                if not isinstance(ancestor, ast.Assign) or len(ancestor.targets) != 1:
                    return None
                target = ancestor.targets[0]
                held = isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                return target.attr if held and target.value.id == "self" else None
        return None

    def _origins(self, expr: ast.AST) -> tuple[list[ast.AST | None], list[ast.arg]]:
        """What the model ``expr`` may hold in this file, and the parameters it may come from that
        no call site of this file fills (their callers are in other files)."""
        elements = self._loop_elements(expr)
        if elements is not None:
            return elements, []
        passed_in: list[ast.arg] = []
        return self.flow.origins(expr, through_model_keeping, parameters=True, open_parameters=passed_in), passed_in

    def _passed_shown(self, param: ast.arg) -> bool:
        """A parameter of a top-level function that the project's other files call with a model shown
        mode-dependent there (``train(seq2seq, ...)`` in a script, ``seq2seq`` built from classes with
        dropout): each caller's argument is judged in the caller's own file, once per run."""
        function = self.ctx.parent(self.ctx.parent(param))
        if not isinstance(function, FUNCTION_NODES) or self.ctx.parent(function) is not self.ctx.tree:
            return False
        return function_summary(
            Definition(self.ctx, function),
            f"torch.mode-shown.passed.{param.arg}",
            lambda d: _passed_shown_elsewhere(d, param),
            False,
        )

    def _loop_elements(self, expr: ast.AST) -> list | None:
        """What a loop variable (``for model in models:``) may hold: the elements of what the loop
        iterates; None when ``expr`` is not only a loop variable."""
        if not isinstance(expr, ast.Name):
            return None
        bindings = self.flow.reaching(expr)
        if not bindings or any(b.kind != "for" or b.index is not None or b.source is None for b in bindings):
            return None
        return [e for b in bindings for e in element_origins(self.ctx, b.source)]

    def _origin_shown(self, origin: ast.AST | None, depth: int) -> bool:
        if origin is None:
            return False
        if isinstance(origin, (ast.List, ast.Tuple)) or (
            isinstance(origin, ast.Starred) and isinstance(origin.value, (ast.List, ast.Tuple, ast.Name))
        ):
            container = origin.value if isinstance(origin, ast.Starred) else origin
            return any(self._origin_shown(e, depth + 1) for e in element_origins(self.ctx, container))
        if not isinstance(origin, ast.Call):
            return False
        return self.construction(origin, depth)

    # ----- a construction ------------------------------------------------------------------------------
    def construction(self, call: ast.Call, depth: int = 0, outer: tuple | None = None) -> bool:
        """The call builds a mode-dependent model. ``outer``: the function the call lies in and the
        constants its parameters have there (see ``shown_under``)."""
        qual = self.ctx.call_qualname(call)
        if qual is not None:
            known = self._torch_or_library(call, qual, depth)
            if known is not None:
                return known
        if isinstance(call.func, ast.Attribute) and call.func.attr == "from_pretrained":
            return _hf_with_dropout(call.func.value)
        found = resolve_class(self.ctx, call.func)
        if found is not None:
            return self._answer_at(found, "class", call, depth, outer) or self._holds_shown_argument(found, call, depth)
        callee = resolve_callee(self.ctx, call)
        if callee is not None and depth < _MAX_DEPTH:
            return self._answer_at(callee, "returns", call, depth, outer)
        return False

    def _answer_at(self, found: tuple, question: str, call: ast.Call, depth: int, outer: tuple | None) -> bool:
        """``_answer`` for the instance or value ``call`` makes: a class's ``__init__`` (a plain
        function) judged with the constants ``call`` passes for its parameters, so a layer built
        only under a condition those constants fail (``if resample == "up": nn.BatchNorm2d(...)``
        for ``Block(..., resample="down")``, ``return nn.BatchNorm1d(d)`` after ``if norm == "gln":
        return ...`` for ``select_norm("gln", d)``) is not built by it."""
        ctx, node = found
        func = class_member(node, "__init__") if isinstance(node, ast.ClassDef) else node
        plain = isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
            isinstance(node, ast.ClassDef) or isinstance(ctx.parent(func), ast.Module)
        )
        values = constants_passed(self.ctx, call, func, ctx, isinstance(node, ast.ClassDef), outer) if plain else {}
        if not values:
            return self._answer(found, question, depth)
        if ctx is self.ctx:
            return self.shown_under(node, func, values, depth + 1, question)
        key = ",".join(f"{name}={value!r}" for name, value in sorted(values.items()))
        return function_summary(
            Definition(ctx, node),
            f"torch.mode-shown.{question}({key})",
            lambda d: mode_dependence(d.ctx).shown_under(d.node, func, values, 0, question),
            False,
        )

    def shown_under(self, node: ast.AST, func: ast.AST, values: dict, depth: int, question: str = "class") -> bool:
        """``question`` (see ``_QUESTIONS``) about a class (``func`` its ``__init__``) or a function
        (``func`` itself) when ``func`` runs with ``values`` for its parameters: only what a path
        those values allow builds or returns counts (a nested construction or helper call judged
        with what it passes there, these values included); a base class counts as it is."""
        key = (node, question, tuple(sorted((name, repr(value)) for name, value in values.items())))
        if key in self._built or depth > _MAX_DEPTH:
            return self._built.get(key, False)
        self._built[key] = False
        if not getattr(self, _QUESTIONS[question])(node, depth):
            shown = False  # not even on every path
        elif question == "returns":
            shown = any(
                self.shown(ret.value, depth) and not decided_off(self.ctx, func, ret, values)
                for ret in self._returns(node)
            )
        else:
            bases = node.bases if isinstance(node, ast.ClassDef) else ()
            shown = any(self._base_shown(base, depth) for base in bases) or any(
                self._node_builds(sub, depth, (func, values)) and not decided_off(self.ctx, func, sub, values)
                for sub in ast.walk(node)
            )
        self._built[key] = shown
        return shown

    def _answer(self, found: tuple, question: str, depth: int) -> bool:
        """Ask about a class or function of this file here; one of another file of the project in its
        own file, once per run (a function summary)."""
        ctx, node = found
        if ctx is self.ctx:
            return getattr(self, _QUESTIONS[question])(node, depth + 1)
        return function_summary(
            Definition(ctx, node),
            f"torch.mode-shown.{question}",
            lambda d: getattr(mode_dependence(d.ctx), _QUESTIONS[question])(d.node, 0),
            False,
        )

    def _torch_or_library(self, call: ast.Call, qual: str, depth: int) -> bool | None:
        """What a torch layer or a known library constructor builds; None for other names."""
        if qual in torch_names.MODE_DEPENDENT_LAYERS:
            rate = argument(call, 0, "p")
            return rate is None or rate_may_be_nonzero(self.ctx, rate)
        if qual in torch_names.DROPOUT_ARGUMENT_LAYERS:
            position, default_on = torch_names.DROPOUT_ARGUMENT_LAYERS[qual]
            rate = argument(call, position, "dropout")
            if rate is None:
                return default_on
            return rate_may_be_nonzero(self.ctx, rate) and self._may_stack(call, qual)
        if qual in torch_names.RUNNING_STATS_NORMS:
            return _literal_true(argument(call, 4, "track_running_stats"))
        if qual in torch_names.LAYER_CONTAINERS:
            parts = [*call.args, *(k.value for k in call.keywords if k.arg in (None, "encoder_layer", "decoder_layer"))]
            return any(self._part_shown(p, depth + 1) for p in parts)
        if qual in torch_names.MODE_FUNCTIONS:
            # Only a mode it is told, and not as a literal, can follow the module's mode
            # (`F.dropout(x, p, self.training)`): `F.dropout(x, p)` is on, `training=True` too, in both.
            position, parameter = torch_names.MODE_FUNCTIONS[qual]
            told = argument(call, position, parameter)
            return passes_unknown_arguments(call) or (told is not None and not isinstance(told, ast.Constant))
        if qual.startswith(tuple(torch_names.MODE_DEPENDENT_CONSTRUCTORS)):
            return True
        if qual in ("timm.create_model", "timm.models.create_model"):
            return _timm_mode_dependent(call)
        if qual.startswith("torch.") or qual.startswith(("torchvision.", "timm.")):
            return False  # other torch layers (Linear, Conv2d, ReLU, LayerNorm, GroupNorm...) and names
        return None

    def _holds_shown_argument(self, found: tuple, call: ast.Call, depth: int) -> bool:
        """A class whose ``__init__`` keeps a parameter on ``self`` as it is (``self.encoder = encoder``:
        a submodule, switched with its parent), built here with a model shown mode-dependent for it
        (``Seq2Seq(Encoder(..., dropout=0.2), decoder)``): the composed model depends on the mode."""
        home, cls = found
        init = class_member(cls, "__init__")
        if not isinstance(init, FUNCTION_NODES) or depth >= _MAX_DEPTH:
            return False
        parameters = {a.arg: a for a in (*init.args.posonlyargs, *init.args.args[1:], *init.args.kwonlyargs)}
        for node in ast.walk(init):
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)):
                continue
            param = parameters.get(node.value.id)
            kept = any(
                isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                for t in node.targets
            )
            if param is None or not kept or any(b.kind != "param" for b in dataflow(home).reaching(node.value)):
                continue
            value = site_argument(self.ctx, init, param, call, 1)
            if value is not None and self.shown(value, depth + 1):
                return True
        return False

    def _may_stack(self, call: ast.Call, qual: str) -> bool:
        """A recurrent layer's dropout acts between stacked layers only: it matters unless every
        value that reaches ``num_layers`` (a constant, a parameter's default, what the call sites
        pass) is a literal 1. An unknown count may be more: a configurable depth given a dropout
        is meant to stack, and an RNN evaluated in training mode then drops activations."""
        position = torch_names.STACKED_DROPOUT_LAYERS.get(qual)
        if position is None:
            return True  # attention and transformer layers apply their dropout as given
        layers = argument(call, position, "num_layers")
        if layers is None:
            return False  # the default: one layer
        return not all(
            isinstance(o, ast.Constant) and type(o.value) is int and o.value <= 1
            for o in self.flow.origins(layers, parameters=True)
        )

    def _part_shown(self, expr: ast.AST, depth: int) -> bool:
        """A layer handed to a container: built there, named, or unpacked (``*layers``, a dict)."""
        if isinstance(expr, ast.Dict):
            return any(self.shown(v, depth) for v in expr.values if v is not None)
        if isinstance(expr, (ast.Starred, ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp)):
            container = expr.value if isinstance(expr, ast.Starred) else expr
            return any(self._origin_shown(e, depth) for e in element_origins(self.ctx, container))
        return self.shown(expr, depth)

    # ----- classes and helpers -------------------------------------------------------------------------
    def class_shown(self, cls: ast.ClassDef, depth: int = 0) -> bool:
        """A class of this file whose body, a base or a helper it calls builds a mode-dependent
        layer, uses a functional dropout/batch norm, or reads ``self.training``."""
        if cls not in self._built:
            self._built[cls] = False  # a class that builds itself (or a cycle): not shown by that
            shown = any(self._base_shown(base, depth) for base in cls.bases) or self.builds(cls, depth)
            self._built[cls] = shown
        return self._built[cls]

    def _base_shown(self, base: ast.AST, depth: int) -> bool:
        qual = self.ctx.qualname(base)
        if qual is not None and qual.startswith(tuple(torch_names.MODE_DEPENDENT_CONSTRUCTORS)):
            return True  # `class Net(torchvision.models.ResNet)`
        found = resolve_class(self.ctx, base)
        return found is not None and self._answer(found, "class", depth)

    def builds(self, node: ast.AST, depth: int) -> bool:
        """Code (a class or a function body) that builds or runs something mode-dependent."""
        if node in self._built and not isinstance(node, ast.ClassDef):
            return self._built[node]
        self._built.setdefault(node, False)
        shown = depth <= _MAX_DEPTH and any(self._node_builds(sub, depth) for sub in ast.walk(node))
        if not isinstance(node, ast.ClassDef):
            self._built[node] = shown
        return shown

    def _node_builds(self, node: ast.AST, depth: int, outer: tuple | None = None) -> bool:
        if isinstance(node, ast.Attribute) and node.attr == "training" and isinstance(node.ctx, ast.Load):
            return True  # the module branches on its mode itself
        if not isinstance(node, ast.Call):
            return False
        if self.construction(node, depth, outer):
            return True
        # A helper of the class or file that builds layers (`self._make_layer(...)`, `make_layers(cfg)`).
        callee = resolve_callee(self.ctx, node)
        return callee is not None and self._answer_at(callee, "builds", node, depth, outer)

    def returns_shown(self, func: ast.AST, depth: int) -> bool:
        """A function whose returned value is shown mode-dependent (``def build(): return Net()``)."""
        if func in self._built or depth > _MAX_DEPTH:
            return self._built.get(func, False)
        self._built[func] = False
        shown = any(self.shown(node.value, depth) for node in self._returns(func))
        self._built[func] = shown
        return shown

    def _returns(self, func: ast.AST) -> list[ast.Return]:
        """The ``return value`` statements of ``func`` itself (not of functions nested in it)."""
        return [
            node
            for node in ast.walk(func)
            if isinstance(node, ast.Return) and node.value is not None and self.ctx.enclosing_function(node) is func
        ]


def _passed_shown_elsewhere(definition: Definition, param: ast.arg) -> bool:
    for home, call in callers_elsewhere(definition) or []:
        value = site_argument(home, definition.node, param, call)
        if value is not None and mode_dependence(home).shown(value):
            return True
    return False


def rate_may_be_nonzero(ctx: FileContext, rate: ast.AST) -> bool:
    """A dropout rate that may be non-zero: a parameter (``nn.Dropout(dropout_p)`` in an
    ``__init__``) holds what its call sites pass (its default where one leaves it out), an
    attribute (``F.dropout(x, self.p)``) what its assignments give it, so a rate is zero only when
    every value that reaches it is a literal zero (a class built with its default ``dropout=0.0``
    everywhere); an unknown value may be non-zero."""
    return not all(_literal_zero(o) for o in dataflow(ctx).origins(rate, parameters=True))


def rate_may_be_nonzero_in_eval_mode(ctx: FileContext, rate: ast.AST) -> bool:
    """``rate_may_be_nonzero`` in eval mode: of ``a if self.training else b`` (also ``b if not
    self.training else a``, at a call site that fills the rate's parameter or in an assignment the
    rate reads) only the arm that runs when the module's training flag is off counts, so a rate
    gated on the flag (``dropout_p=0.0 if not self.training else cfg.attention_dropout``) is zero
    in eval mode."""
    origins = dataflow(ctx).origins(rate, _arm_in_eval_mode, parameters=True)
    return not all(_literal_zero(o) for o in origins)


def is_training_flag(expr: ast.AST) -> bool | None:
    """``self.training`` (or any module's ``.training``): true exactly in training mode."""
    return True if isinstance(expr, ast.Attribute) and expr.attr == "training" else None


def _arm_in_eval_mode(expr: ast.AST) -> ast.AST | None:
    if not isinstance(expr, ast.IfExp):
        return None
    if implies(expr.test, True, is_training_flag):
        return expr.orelse  # the test holds only in training mode
    if implies(expr.test, False, is_training_flag):
        return expr.body  # the test fails only in training mode
    return None


def _literal_zero(expr: ast.AST | None) -> bool:
    return isinstance(expr, ast.Constant) and expr.value in (0, 0.0, None, False)


def _literal_true(expr: ast.AST | None) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is True


def _timm_mode_dependent(call: ast.Call) -> bool:
    name = argument(call, 0, "model_name")
    if isinstance(name, ast.Constant) and isinstance(name.value, str):
        if name.value.split("/")[-1].startswith(torch_names.TIMM_MODE_DEPENDENT_FAMILIES):
            return True
    return any(k.arg in torch_names.TIMM_DROP_KEYWORDS and not _literal_zero(k.value) for k in call.keywords)


def _hf_with_dropout(receiver: ast.AST) -> bool:
    name = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", "")
    return name.startswith(torch_names.HF_DROPOUT_MODEL_PREFIXES) and not name.startswith("Auto")


def mode_dependence(ctx: FileContext) -> ModeDependence:
    return ctx.shared("mode-dependence", lambda: ModeDependence(ctx))
