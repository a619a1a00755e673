"""Where the model a call runs comes from, and what the call feeds it.

Evaluation means running a model whose weights were trained or loaded in this program on data.
Two kinds of model call are not that, whatever the function around them is called:

* a call on synthetic input only -- ``torch.randn(2, 3, 32, 32)``, ``torch.zeros(1, 3, *size)``,
  containers of those: a shape probe, a smoke test, a warm-up before tracing;
* a call on a model built fresh (a constructor without pretrained weights) that nothing in this
  program trains or loads: nothing reads its parameters, loads a state into it, switches it to
  train mode, hands it to other code or returns it.

Models from loaders that manage the mode themselves are known too: ``X.from_pretrained(...)``
returns its model in eval mode, and ``torch.hub.load(...)`` returns whatever the hub entry point
builds (often an inference wrapper that sets the modes itself), which the linter cannot see.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import call_graph, resolve_class
from torchlint.analysis.containers import element_origins
from torchlint.analysis.context import FUNCTION_TYPES
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.definitions import Definition
from torchlint.analysis.imports import dotted_name
from torchlint.analysis.nodes import argument_for, method_call
from torchlint.analysis.summaries import function_summary
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.constructors import constructor_role
from torchlint.torchmodel.events import EventKind
from torchlint.torchmodel.forward_calls import model_expression
from torchlint.torchmodel.iterations import iterations
from torchlint.torchmodel.modules import module_classes
from torchlint.torchmodel.roles import Role
from torchlint.torchmodel.walk import event_walker

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

SYNTHETIC_FACTORIES = frozenset(
    "torch." + name
    for name in (
        "randn",
        "rand",
        "randint",
        "zeros",
        "ones",
        "empty",
        "full",
        "randn_like",
        "rand_like",
        "zeros_like",
        "ones_like",
        "empty_like",
        "full_like",
    )
)
SYNTHETIC_METHODS = frozenset({"new_zeros", "new_ones", "new_empty", "new_full"})
# Methods that hand back their receiver (a model), or a moved, cast or reshaped copy of it (a tensor).
_KEEPING_MODEL_METHODS = torch_names.DEVICE_DTYPE_MOVES | {"eval"}
TENSOR_KEEPING_METHODS = torch_names.DEVICE_DTYPE_MOVES | {
    "long",
    "int",
    "type",
    "detach",
    "unsqueeze",
    "contiguous",
}
# Model attributes whose use shows the weights are trained, loaded, saved or reset.
_WEIGHT_USES = frozenset(
    {
        "parameters",
        "named_parameters",
        "load_state_dict",
        "state_dict",
        "train",
        "requires_grad_",
        "zero_grad",
        "apply",
        "load",
        "load_weights",
        "init_weights",
    }
)
# Calls that only look at an object: handing a model to them neither trains nor loads it.
_INSPECTING = frozenset({"print", "len", "type", "isinstance", "str", "repr", "id", "hasattr", "getattr", "summary"})
_PRETRAINED_KEYWORDS = frozenset({"pretrained", "weights", "checkpoint", "pretrained_path", "ckpt", "state_dict"})


class ModelProvenance:
    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self.flow = dataflow(ctx)

    # ----- what the call is fed ------------------------------------------------------------------
    def runs_on_synthetic_input(self, call: ast.Call) -> bool:
        """Every input of the model call is a tensor made from a shape (or a container of those)."""
        inputs = [*call.args, *(k.value for k in call.keywords)]
        return bool(inputs) and all(self._synthetic(arg, 0) for arg in inputs)

    def _synthetic(self, expr: ast.AST, depth: int) -> bool:
        if depth > 6:
            return False
        if isinstance(expr, ast.Starred):
            return self._synthetic(expr.value, depth + 1)
        if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
            return bool(expr.elts) and all(self._synthetic(e, depth + 1) for e in expr.elts)
        if isinstance(expr, ast.Dict):
            return bool(expr.values) and all(self._synthetic(v, depth + 1) for v in expr.values)
        if isinstance(expr, ast.Constant):
            return True  # a flag or size next to the tensors
        if isinstance(expr, ast.BinOp):  # `torch.ones(1, 3, 800, 800) * 0.3`
            return self._synthetic(expr.left, depth + 1) and self._synthetic(expr.right, depth + 1)
        if isinstance(expr, ast.UnaryOp):
            return self._synthetic(expr.operand, depth + 1)
        if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
            return self._synthetic(expr.value, depth + 1)  # `encoded["input_ids"]` of a literal's encoding
        if isinstance(expr, ast.Call):
            if self.ctx.call_qualname(expr) in SYNTHETIC_FACTORIES:
                return True
            found = method_call(expr)
            if found is not None and found[0] in SYNTHETIC_METHODS:
                return True
            if found is not None and found[0] in TENSOR_KEEPING_METHODS and self.ctx.call_qualname(expr) is None:
                return self._synthetic(found[1], depth + 1)
            return self._derived_from_literals(expr, depth)
        if isinstance(expr, ast.Name):
            origins = self.flow.origins(expr)
            return bool(origins) and all(o is not None and self._synthetic(o, depth + 1) for o in origins)
        return False

    def _derived_from_literals(self, call: ast.Call, depth: int) -> bool:
        """A call handed a collection of values written in the code (``tokenizer(["a sentence",
        "another"])``, ``torch.tensor([[1.0, 2.0]])``) and otherwise only constants or synthetic
        tensors computes from no data. A lone constant (``get_batch("val")``, a file name) selects
        data, so it does not count as the literal input."""
        inputs = [*call.args, *(k.value for k in call.keywords)]
        return any(self._literal_collection(a) for a in inputs) and all(self._synthetic(a, depth + 1) for a in inputs)

    def _literal_collection(self, expr: ast.AST) -> bool:
        if isinstance(expr, ast.Name):
            origins = self.flow.origins(expr)
            return bool(origins) and all(o is not None and self._literal_collection(o) for o in origins)
        return (
            isinstance(expr, (ast.List, ast.Tuple, ast.Set))
            and bool(expr.elts)
            and all(isinstance(e, ast.Constant) or self._literal_collection(e) for e in expr.elts)
        )

    # ----- where the model comes from ------------------------------------------------------------
    def origins(self, call: ast.Call) -> list[ast.AST | None]:
        """The expressions that may have produced the model ``call`` runs (through moves, casts,
        ``.eval()``); None for what cannot be told (a parameter, an unpacked value)."""
        return self.flow.origins(model_expression(call), self._through_model_keeping)

    def _through_model_keeping(self, expr: ast.AST) -> ast.AST | None:
        found = method_call(expr)
        if found is not None and found[0] in _KEEPING_MODEL_METHODS:
            return found[1]
        return None

    def fresh_and_untouched(self, call: ast.Call) -> bool:
        """The model is built here without pretrained weights, and nothing in this program trains,
        loads or hands on its weights."""
        origins = self.origins(call)
        if not origins or any(not self._fresh_construction(o) for o in origins):
            return False
        model = model_expression(call)
        name = dotted_name(model)
        return name is not None and not self._touched(name, model)

    def _fresh_construction(self, origin: ast.AST | None) -> bool:
        if not isinstance(origin, ast.Call) or constructor_role(self.ctx, origin) != Role.MODEL:
            return False
        if isinstance(origin.func, ast.Attribute) and origin.func.attr == "from_pretrained":
            return False
        if any(isinstance(a, ast.Constant) and a.value is True for a in origin.args):
            return False  # `resnet18(True)`: the old positional `pretrained`
        for kw in origin.keywords:
            if kw.arg is None:
                return False  # `Net(**cfg)`: the configuration may ask for pretrained weights
            if kw.arg in _PRETRAINED_KEYWORDS and not (
                isinstance(kw.value, ast.Constant) and kw.value.value in (None, False)
            ):
                return False
        return True

    def _touched(self, name: str, at: ast.AST) -> bool:
        """Whether code that sees ``name`` uses its weights (parameters, state, train mode), hands
        it to another call, returns it or stores it elsewhere."""
        scope = self._scope_of(name, at)
        for node in ast.walk(scope):
            if not isinstance(node, (ast.Name, ast.Attribute)) or not isinstance(node.ctx, ast.Load):
                continue
            if dotted_name(node) != name:
                continue
            parent = self.ctx.parent(node)
            if isinstance(parent, ast.Attribute) and parent.attr in _WEIGHT_USES:
                return True
            if isinstance(parent, ast.Call) and node is not parent.func:
                callee = dotted_name(parent.func) or ""
                if callee.rsplit(".", 1)[-1] not in _INSPECTING:
                    return True  # `train(net, loader)`, `load_checkpoint(net, path)`, `DDP(net)`
            if isinstance(parent, ast.Call) and node is parent.func and self._in_training_code(parent):
                return True  # its forward feeds a backward: `net(x).sum().backward()` in a training loop
            if isinstance(parent, (ast.Return, ast.Yield, ast.keyword)) or (
                isinstance(parent, ast.Assign) and parent.value is node
            ):
                return True
        return False

    def _in_training_code(self, call: ast.Call) -> bool:
        """Inside a loop whose iterations train, or a function that runs a backward."""
        if any(iterations(self.ctx).trains_each_iteration(loop) for loop in self.ctx.enclosing_loops(call)):
            return True
        func = self.ctx.enclosing_function(call)
        return func is not None and any(
            e.kind is EventKind.BACKWARD for e in event_walker(self.ctx).function_events(func)
        )

    def _scope_of(self, name: str, at: ast.AST) -> ast.AST:
        """Where uses of ``name`` can be: its function (a local name), its class (``self.x``),
        else the whole file."""
        if name.startswith("self."):
            return self.ctx.enclosing(at, ast.ClassDef) or self.ctx.tree
        func = self.ctx.enclosing_function(at)
        if func is not None and "." not in name and self._bound_in(name, func):
            return func
        return self.ctx.tree

    def _bound_in(self, name: str, func) -> bool:
        return any(b.stmt is not None for b in self.flow.flow(func).bindings.get(name, ()))

    # ----- loaders that manage the mode ------------------------------------------------------------
    def loader_mode(self, call: ast.Call) -> str | None:
        """ "eval" when every value the model may hold comes from ``X.from_pretrained(...)`` (which
        returns it in eval mode) and nothing may train it here; "opaque" when it comes from
        ``torch.hub.load(...)``; None otherwise."""
        origins = self.origins(call)
        if not origins or None in origins:
            return None
        if all(isinstance(o, ast.Call) and self.ctx.call_qualname(o) == "torch.hub.load" for o in origins):
            return "opaque"
        from_pretrained = all(
            isinstance(o, ast.Call) and isinstance(o.func, ast.Attribute) and o.func.attr == "from_pretrained"
            for o in origins
        )
        model = model_expression(call)
        name = dotted_name(model)
        if from_pretrained and name is not None and not self._touched(name, model):
            return "eval"
        return None


# ----- whether train and eval mode differ for a model ----------------------------------------------
# Functions whose result depends on the mode they are told: the functional dropouts and batch norm.
_MODE_FUNCTIONS = frozenset({*torch_names.DROPOUT_FUNCTIONS, "torch.nn.functional.batch_norm"})


class ModeDependence:
    """Whether switching a model between train and eval mode changes what it computes: only known
    for models built from classes of the project (this file's, or another's read in that file) and
    ``torch.nn`` layers."""

    def __init__(self, ctx: FileContext, provenance: ModelProvenance):
        self.ctx = ctx
        self.provenance = provenance
        self._classes: dict[str, bool | None] = {}

    def of_expression(self, expr: ast.AST, depth: int = 0) -> bool | None:
        """True/False for the model ``expr`` holds when every value it may hold is known; a parameter
        is followed to the arguments its function's call sites pass (a few calls up)."""
        elements = self._loop_elements(expr)
        if elements is not None:
            return self._of_origins(elements, expr, depth)
        return self._of_origins(self.provenance.flow.origins(expr, self.provenance._through_model_keeping), expr, depth)

    def _of_origins(self, origins, expr: ast.AST, depth: int) -> bool | None:
        verdicts = set()
        for origin in origins:
            if origin is None:
                verdicts.add(self._from_callers(expr, depth))
            else:
                verdicts.add(self._of_construction(origin))
            if True in verdicts or None in verdicts:
                return None if None in verdicts and True not in verdicts else True
        return False if verdicts == {False} else None

    def _loop_elements(self, expr: ast.AST) -> list | None:
        """What a loop variable (``for model in models:``) may hold: the elements of what the loop
        iterates; None when ``expr`` is not only a loop variable."""
        if not isinstance(expr, ast.Name):
            return None
        bindings = self.provenance.flow.reaching(expr)
        if not bindings or any(b.kind != "for" or b.index is not None or b.source is None for b in bindings):
            return None
        return [e for b in bindings for e in element_origins(self.ctx, b.source)]

    def _from_callers(self, expr: ast.AST, depth: int) -> bool | None:
        func = self.ctx.enclosing_function(expr)
        if not isinstance(expr, ast.Name) or func is None or depth >= 3:
            return None
        if expr.id not in {a.arg for a in func.args.posonlyargs + func.args.args + func.args.kwonlyargs}:
            return None
        sites = call_graph(self.ctx).callers(func)
        verdicts = {self._argument_verdict(site, func, expr.id, depth) for site in sites}
        if not sites or None in verdicts:
            return None
        return True in verdicts

    def _argument_verdict(self, site, func, name, depth) -> bool | None:
        arg = argument_for(site, func, name)
        return None if arg is None else self.of_expression(arg, depth + 1)

    def _of_construction(self, origin: ast.AST) -> bool | None:
        if not isinstance(origin, ast.Call):
            return None
        qual = self.ctx.call_qualname(origin)
        if qual is not None and qual.startswith("torch.nn."):
            return self._torch_layer(origin, qual)
        if qual is not None and torch_names.builds_no_module(qual):
            return False
        func = origin.func
        if isinstance(func, ast.Name) and func.id in self.ctx.classes:
            return self._class_depends(func.id)
        elsewhere = self._class_elsewhere(func)
        return class_mode_dependence(elsewhere) if elsewhere is not None else None

    def _class_elsewhere(self, expr: ast.AST) -> Definition | None:
        """The class of another file of the project that ``expr`` names, if it names one."""
        found = resolve_class(self.ctx, expr) if isinstance(expr, (ast.Name, ast.Attribute)) else None
        return Definition(*found) if found is not None and found[0] is not self.ctx else None

    def _torch_layer(self, call: ast.Call, qual: str) -> bool | None:
        if qual in torch_names.MODE_DEPENDENT_LAYERS:
            return True
        if qual.rsplit(".", 1)[-1] in ("Sequential", "ModuleList", "ModuleDict"):
            parts = [self._part(a) for a in call.args]
            return True if True in parts else None if None in parts else False
        if qual.startswith("torch.nn.functional.") or qual.count(".") != 2:
            return None
        # Any other torch.nn layer (Linear, Conv2d, ReLU, LayerNorm, GroupNorm, Embedding...) is the
        # same in both modes, except an instance norm asked to track running statistics.
        tracks = next((k.value for k in call.keywords if k.arg == "track_running_stats"), None)
        return isinstance(tracks, ast.Constant) and tracks.value is True

    def _part(self, expr: ast.AST) -> bool | None:
        """A layer handed to ``Sequential``/``ModuleList``: built there (``nn.ReLU() if c else
        nn.Tanh()``), named, or unpacked from a container (``*layers``)."""
        if isinstance(expr, (ast.Starred, ast.List, ast.Tuple)):
            container = expr.value if isinstance(expr, ast.Starred) else expr
            return self._of_origins(element_origins(self.ctx, container), container, depth=3)
        return self.of_expression(expr)

    def _class_depends(self, name: str) -> bool | None:
        if name in self._classes:
            return self._classes[name]
        self._classes[name] = None  # a class that builds itself: unknown
        cls = self.ctx.classes[name]
        for base in cls.bases:
            local = isinstance(base, ast.Name) and base.id in self.ctx.classes
            seen = local or self._class_elsewhere(base) is not None
            if not seen and self.ctx.qualname(base) != "torch.nn.Module":
                return None  # a base the linter cannot see (or a framework's) may add layers
        verdict = self._body_depends(cls)
        self._classes[name] = verdict
        return verdict

    def _body_depends(self, cls: ast.ClassDef) -> bool | None:
        unknown = False
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in self.ctx.classes:
                inherited = self._class_depends(base.id)
            else:
                elsewhere = self._class_elsewhere(base)
                inherited = class_mode_dependence(elsewhere) if elsewhere is not None else False
            if inherited is not False:
                return inherited
        for node in ast.walk(cls):
            if isinstance(node, ast.Attribute) and node.attr == "training":
                return True  # the module branches on its mode itself
            if isinstance(node, FUNCTION_TYPES) and node.name in ("train", "eval"):
                return True
            if not isinstance(node, ast.Call):
                continue
            qual = self.ctx.call_qualname(node)
            if qual in _MODE_FUNCTIONS:
                return True
            if qual is not None and qual.startswith("torch.nn.") and qual.count(".") == 2:
                verdict = self._torch_layer(node, qual)
            elif qual is not None and torch_names.builds_no_module(qual):
                continue  # `Categorical(logits=...)` in a forward: a distribution, not a layer
            elif isinstance(node.func, ast.Name) and node.func.id in self.ctx.classes:
                verdict = self._class_depends(node.func.id) if node.func.id in module_classes(self.ctx) else False
            elif (elsewhere := self._class_elsewhere(node.func)) is not None:
                is_module = elsewhere.name in module_classes(elsewhere.ctx)
                verdict = class_mode_dependence(elsewhere) if is_module else False
            elif isinstance(node.func, (ast.Name, ast.Attribute)) and (
                (node.func.id if isinstance(node.func, ast.Name) else node.func.attr)[:1].isupper()
            ):
                verdict = None  # a layer class from elsewhere
            else:
                continue
            if verdict is True:
                return True
            unknown = unknown or verdict is None
        return None if unknown else False


def class_mode_dependence(cls: Definition) -> bool | None:
    """``ModeDependence`` of a class of another file of the project, read in its own file once per
    run (unknown while it is being answered, in a cycle)."""
    return function_summary(
        cls,
        "torch.mode-dependence",
        lambda d: ModeDependence(d.ctx, ModelProvenance(d.ctx))._class_depends(d.name),
        None,
    )
