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

from torchlint.analysis.callgraph import calls_elsewhere, resolve_call, resolve_local_call, resolve_name
from torchlint.analysis.containers import item_origins
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.imports import dotted_name
from torchlint.analysis.nodes import last_name, method_call, returns_of, walk_function_body
from torchlint.analysis.reachability import statements_between
from torchlint.analysis.summaries import function_summary
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.constructors import constructor_role, preserved_argument
from torchlint.torchmodel.events import EventKind
from torchlint.torchmodel.forward_calls import mode_switches, model_expression
from torchlint.torchmodel.frozen import frozen_right_after
from torchlint.torchmodel.input_checks import asserts_on_results
from torchlint.torchmodel.iterations import iterations
from torchlint.torchmodel.roles import Role
from torchlint.torchmodel.walk import event_walker

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext
    from torchlint.analysis.definitions import Definition

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
        "arange",
        "linspace",
        "eye",
    )
)
SYNTHETIC_METHODS = frozenset({"new_zeros", "new_ones", "new_empty", "new_full"})
# Methods that hand back their receiver (a model), or a moved, cast or reshaped copy of it (a tensor).
_KEEPING_MODEL_METHODS = torch_names.DEVICE_DTYPE_MOVES | {"eval"}
TENSOR_KEEPING_METHODS = torch_names.DEVICE_DTYPE_MOVES | {
    "long",
    "int",
    "bool",
    "short",
    "byte",
    "clone",
    "type",
    "type_as",  # `x.type_as(weight)`: x cast to another tensor's dtype and device
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
INSPECTING_CALLS = frozenset(
    {"print", "len", "type", "isinstance", "str", "repr", "id", "hasattr", "getattr", "summary"}
)
# How deep `_synthetic` follows an input through names, casts and containers: a literal batch moved
# and cast a few times (`torch.tensor([[1, 1]]).bool().to("cuda")`, then `.to("cpu")`) is a dozen steps.
_MAX_DEPTH = 12
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
        if depth > _MAX_DEPTH:
            return False
        if isinstance(expr, ast.Starred):
            return self._synthetic(expr.value, depth + 1)
        if isinstance(expr, (ast.List, ast.Tuple, ast.Set)):
            return bool(expr.elts) and all(self._synthetic(e, depth + 1) for e in expr.elts)
        if isinstance(expr, ast.Dict):
            return bool(expr.values) and all(self._synthetic(v, depth + 1) for v in expr.values)
        if isinstance(expr, ast.Constant):
            return True  # a flag or size next to the tensors
        if isinstance(expr, ast.IfExp):  # `torch.arange(n) if custom_pos else None`
            return self._synthetic(expr.body, depth + 1) and self._synthetic(expr.orelse, depth + 1)
        if isinstance(expr, ast.BinOp):  # `torch.ones(1, 3, 800, 800) * 0.3`
            return self._synthetic(expr.left, depth + 1) and self._synthetic(expr.right, depth + 1)
        if isinstance(expr, ast.UnaryOp):
            return self._synthetic(expr.operand, depth + 1)
        if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
            return self._synthetic(expr.value, depth + 1)  # `encoded["input_ids"]` of a literal's encoding
        if isinstance(expr, ast.Call):
            qualname = self.ctx.call_qualname(expr)
            if qualname in SYNTHETIC_FACTORIES:
                return True
            if qualname in torch_names.VARIABLE_WRAPPERS and expr.args:
                return self._synthetic(expr.args[0], depth + 1)  # `Variable(x)` is `x`
            if qualname in torch_names.TENSOR_SHAPE_FUNCTIONS:
                return self._reshapes_synthetic(expr, depth)
            found = method_call(expr)
            if found is not None and found[0] in SYNTHETIC_METHODS:
                return True
            if found is not None and found[0] in TENSOR_KEEPING_METHODS and qualname is None:
                return self._synthetic(found[1], depth + 1)
            return self._derived_from_literals(expr, depth)
        if isinstance(expr, ast.Name):
            # A parameter holds what every call site in this file passes (`estimate_latency(model,
            # torch.rand(8, 3, 224, 224))`); a function no call here shows is fed an unknown value.
            origins = self.flow.origins(expr, parameters=True)
            return bool(origins) and all(o is not None and self._synthetic(o, depth + 1) for o in origins)
        return False

    def computed_from_synthetic_input(self, expr: ast.AST, depth: int = 0) -> bool:
        """``expr`` is computed from synthetic tensors only: a synthetic tensor (see
        ``runs_on_synthetic_input``), or what calls, methods, items and operators make of such
        tensors (``model(torch.randn(1, 384))[0].sum()``). A call needs a synthetic tensor among
        its inputs: one given only constants (``load_batch("train.pt")``) may read data."""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(expr, ast.Name):
            origins = self.flow.origins(expr)
            return bool(origins) and all(
                o is not None and self.computed_from_synthetic_input(o, depth + 1) for o in origins
            )
        if isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant):
            return self.computed_from_synthetic_input(expr.value, depth + 1)
        if isinstance(expr, ast.BinOp):  # `loss * 0.5`, `out - target`
            operands = [expr.left, expr.right]
            return self._all_computed_from_synthetic(operands, depth) and not all(
                isinstance(o, ast.Constant) for o in operands
            )
        if isinstance(expr, ast.UnaryOp):
            return self.computed_from_synthetic_input(expr.operand, depth + 1)
        if not isinstance(expr, ast.Call):
            return not isinstance(expr, ast.Constant) and self._synthetic(expr, depth)
        if self._synthetic(expr, depth):
            return True
        inputs = [*expr.args, *(k.value for k in expr.keywords)]
        if not self._all_computed_from_synthetic(inputs, depth):
            return False
        found = method_call(expr)
        if found is not None and self.computed_from_synthetic_input(found[1], depth + 1):
            return True  # a method of a synthetic value: `out[0].sum()`, `out.mean(dim=1)`
        return any(not isinstance(a, ast.Constant) for a in inputs)  # a model or function fed one

    def _all_computed_from_synthetic(self, exprs: list[ast.AST], depth: int) -> bool:
        """Each of ``exprs`` is a constant (a size, a flag) or computed from synthetic tensors."""
        return all(isinstance(e, ast.Constant) or self.computed_from_synthetic_input(e, depth + 1) for e in exprs)

    def _derived_from_literals(self, call: ast.Call, depth: int) -> bool:
        """A call handed a collection of values written in the code (``tokenizer(["a sentence",
        "another"])``, ``torch.tensor([[1.0, 2.0]])``) and otherwise only constants or synthetic
        tensors computes from no data. A lone constant (``get_batch("val")``, a file name) selects
        data, so it does not count as the literal input."""
        inputs = [*call.args, *(k.value for k in call.keywords)]
        return any(self._literal_collection(a) for a in inputs) and all(self._synthetic(a, depth + 1) for a in inputs)

    def _reshapes_synthetic(self, call: ast.Call, depth: int) -> bool:
        """A shape function (``einops.rearrange(x, "b c h w -> b (h w) c", p=patch)``,
        ``torch.cat([a, b], dim=1)``) whose tensor input, its first argument, is synthetic: the
        other arguments are a pattern, axis sizes or dimensions, never data."""
        tensors = call.args[0] if call.args else None
        return tensors is not None and not isinstance(tensors, ast.Constant) and self._synthetic(tensors, depth + 1)

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
        return self.flow.origins(model_expression(call), through_model_keeping)

    def fresh_and_untouched(self, call: ast.Call) -> bool:
        """The model is built here without pretrained weights, and nothing in this program trains,
        loads or hands on its weights."""
        origins = self.origins(call)
        if not origins or any(not self.fresh_construction(o) for o in origins):
            return False
        model = model_expression(call)
        name = dotted_name(model)
        return name is not None and not self._touched(name, model)

    def fresh_construction(self, origin: ast.AST | None) -> bool:
        """``origin`` builds a model from its class, or through a builder of the project that only
        constructs one (``fresh_builder``), without pretrained weights."""
        if not isinstance(origin, ast.Call):
            return False
        if constructor_role(self.ctx, origin) != Role.MODEL and not self._calls_fresh_builder(origin):
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

    def _calls_fresh_builder(self, call: ast.Call) -> bool:
        found = resolve_name(self.ctx, call.func)
        return (
            found is not None
            and found.is_function
            and function_summary(found, "torch.fresh-model-builder", fresh_builder, False)
        )

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
                if isinstance(node, ast.Name) and frozen_right_after(self.ctx, parent, name, at):
                    continue  # loaded, then frozen whole at once: it runs untrained or records nothing
                return True
            if isinstance(parent, ast.Call) and node is not parent.func:
                callee = dotted_name(parent.func) or ""
                if callee.rsplit(".", 1)[-1] not in INSPECTING_CALLS and not _only_runs_argument(
                    self.ctx, parent, node
                ):
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
        if func is not None and "." not in name and self.bound_in(name, func):
            return func
        return self.ctx.tree

    def bound_in(self, name: str, func, parameters: bool = True) -> bool:
        """``name`` is bound in ``func`` (as one of its parameters too, unless ``parameters`` is False)."""
        bindings = self.flow.flow(func).bindings.get(name, ())
        return any(b.stmt is not None and (parameters or b.kind != "param") for b in bindings)

    # ----- loaders that manage the mode ------------------------------------------------------------
    def loader_mode(self, call: ast.Call) -> str | None:
        """ "eval" when the model ``call`` runs comes in eval mode from a loader that returns it so
        (``loaded_in_eval_mode``); "opaque" when it comes from ``torch.hub.load(...)``; None
        otherwise."""
        origins = [
            found
            for origin in self.origins(call)
            for found in (item_origins(self.ctx, origin) if isinstance(origin, ast.Subscript) else [origin])
        ]
        if not origins or None in origins:
            return None
        if all(isinstance(o, ast.Call) and self.ctx.call_qualname(o) == "torch.hub.load" for o in origins):
            return "opaque"
        return "eval" if self.loaded_in_eval_mode(model_expression(call)) else None

    def loaded_in_eval_mode(self, model: ast.AST) -> bool:
        """A model starts in the mode its constructor or loader gives it: every value ``model`` may
        hold comes from a loader documented to return eval mode (``X.from_pretrained(...)``,
        through moves and wrappers: ``DDP(model)``), and nothing in this program may switch it to
        train mode: no ``.train()`` in this file or the project functions it calls, and the model
        is handed to no code the linter cannot read (a trainer of another library may train it)."""
        origins = self.flow.origins(model, _through_moves_and_wrappers(self.ctx))
        if not origins or not all(_eval_mode_load(o) for o in origins):
            return False
        if self._may_switch_to_train() and not all(self._no_train_switch_between(o, model) for o in origins):
            return False
        name = dotted_name(model)
        return name is not None and not self._handed_to_unread_code(name, model)

    def _no_train_switch_between(self, load: ast.AST, at: ast.AST) -> bool:
        """Nothing that runs between the load and ``at`` may switch a model to train mode: the
        load's statement runs before ``at`` in one block, and no statement in between (or around
        ``at`` in that block), nor the functions they call, has a ``.train()`` (of any model). A
        ``.train()`` the program runs only later (the training after an evaluation of the loaded
        model) does not reach ``at``."""
        between = statements_between(self.ctx, load, at)
        if between is None:
            return False
        kinds = {e.kind for e in event_walker(self.ctx).events(between)}
        return EventKind.TRAIN not in kinds and EventKind.SET_MODE not in kinds

    def _may_switch_to_train(self) -> bool:
        kinds = {e.kind for e in mode_switches(self.ctx)} | event_walker(self.ctx).kinds_elsewhere
        return EventKind.TRAIN in kinds or EventKind.SET_MODE in kinds

    def _handed_to_unread_code(self, name: str, at: ast.AST) -> bool:
        """``name`` is handed to a call that is neither a function of this project (whose mode
        switches count above), nor torch's, nor a wrapper, nor one that only inspects it."""
        for node in ast.walk(self._scope_of(name, at)):
            if not isinstance(node, (ast.Name, ast.Attribute)) or not isinstance(node.ctx, ast.Load):
                continue
            parent = self.ctx.parent(node)
            if dotted_name(node) != name or not isinstance(parent, ast.Call) or node is parent.func:
                continue
            if resolve_local_call(self.ctx, parent) is not None or parent in calls_elsewhere(self.ctx):
                continue
            qual = self.ctx.call_qualname(parent) or ""
            if qual.startswith("torch.") or preserved_argument(self.ctx, parent) is not None:
                continue
            if (dotted_name(parent.func) or "").rsplit(".", 1)[-1] in INSPECTING_CALLS:
                continue
            return True
        return False


def model_provenance(ctx: FileContext) -> ModelProvenance:
    """The file's shared ``ModelProvenance``."""
    return ctx.shared("model-provenance", lambda: ModelProvenance(ctx))


def tests_code_on_synthetic_input(ctx: FileContext, func: ast.AST | None, loss: ast.AST | None) -> bool:
    """A training step of ``func`` whose ``loss`` is computed from synthetic input only (no data
    loader, no dataset read: ``computed_from_synthetic_input``), in a function that asserts on
    its results (``asserts_on_results``), is a test of the code -- two implementations compared
    for a few steps on ``torch.randn(...)`` -- like a smoke test that runs a model on such input
    is no evaluation: no training run whose numbers anyone keeps."""
    return (
        func is not None
        and loss is not None
        and asserts_on_results(ctx, func)
        and model_provenance(ctx).computed_from_synthetic_input(loss)
    )


def _eval_mode_load(origin: ast.AST | None) -> bool:
    return (
        isinstance(origin, ast.Call)
        and isinstance(origin.func, ast.Attribute)
        and origin.func.attr in torch_names.EVAL_MODE_LOADER_METHODS
    )


def _through_moves_and_wrappers(ctx: FileContext):
    def through(expr: ast.AST) -> ast.AST | None:
        kept = through_model_keeping(expr)
        if kept is not None:
            return kept
        return preserved_argument(ctx, expr) if isinstance(expr, ast.Call) else None

    return through


def fresh_builder(function: Definition) -> bool:
    """A function of the project that only builds a model (``def get_model(n): model = Net(n);
    return model``, or one handing back what such a builder returns, a chain of them): every return
    hands back a model it constructs fresh there (``fresh_construction``), and nothing in it loads a
    state into that model or hands it to other code, which might. Each call returns a new model
    with its initial weights, like calling the class itself."""
    ctx, node = function.ctx, function.node
    returns = returns_of(node)
    if not returns or any(r.value is None for r in returns):
        return False
    provenance, flow = ModelProvenance(ctx), dataflow(ctx)
    origins = [o for r in returns for o in flow.origins(r.value, through_model_keeping)]
    if not origins or not all(provenance.fresh_construction(o) and ctx.enclosing_function(o) is node for o in origins):
        return False
    names = {
        t.id
        for o in origins
        for t in getattr(ctx.parent(o), "targets", ())  # `model = Net(...)`: the name it is built into
        if isinstance(t, ast.Name)
    }
    return not any(
        isinstance(n, ast.Name) and n.id in names and _may_load_into(ctx, n) for n in walk_function_body(node)
    )


def _may_load_into(ctx: FileContext, name: ast.Name) -> bool:
    """A use of a model just built that may load a state into it: a loading method of it or of one
    of its parts (``model.encoder.load_state_dict(...)``), a store into it, or the model or a part
    handed to a call other than an inspection (``load_checkpoint(model, path)``)."""
    top: ast.AST = name
    parent = ctx.parent(top)
    while isinstance(parent, (ast.Attribute, ast.Subscript)) and parent.value is top:
        top, parent = parent, ctx.parent(parent)
    if isinstance(getattr(top, "ctx", None), (ast.Store, ast.Del)):
        return top is not name  # `model.fc.weight = ...`; binding the name itself is its construction
    if isinstance(parent, ast.Call) and parent.func is top:
        return isinstance(top, ast.Attribute) and top.attr in torch_names.STATE_LOADING_METHODS
    if isinstance(parent, ast.keyword):
        parent = ctx.parent(parent)
    if isinstance(parent, ast.Call):
        return (last_name(parent.func) or "") not in INSPECTING_CALLS
    return False


def _only_runs_argument(ctx: FileContext, call: ast.Call, model: ast.AST) -> bool:
    """``test_mode(model, image)``: ``model`` goes, as a positional argument, to a plain function of
    the project that only runs the model it is given (``only_runs_parameter``): no load, no training."""
    if model not in call.args:
        return False
    callee = resolve_call(ctx, call)
    if callee is None or not callee.is_function:
        return False
    params = callee.node.args.posonlyargs + callee.node.args.args
    index = call.args.index(model)
    if (
        index >= len(params)
        or params[index].arg in ("self", "cls")
        or any(isinstance(a, ast.Starred) for a in call.args[:index])
    ):
        return False
    name = params[index].arg
    return function_summary(callee, f"torch.only-runs-parameter:{name}", lambda d: only_runs_parameter(d, name), False)


def only_runs_parameter(function: Definition, name: str) -> bool:
    """Every use of the parameter ``name`` in the function's body runs it (``model(x)``,
    ``model.forward(x)``) or hands it on, positionally, to a function of the project that only runs
    it (itself included: a recursive split of the input), and the function never rebinds it."""
    ctx, node = function.ctx, function.node
    for sub in walk_function_body(node):
        if not (isinstance(sub, ast.Name) and sub.id == name):
            continue
        if not isinstance(sub.ctx, ast.Load):
            return False
        parent = ctx.parent(sub)
        if isinstance(parent, ast.Call) and parent.func is sub:
            continue
        if isinstance(parent, ast.Attribute) and parent.attr == "forward":
            continue
        if isinstance(parent, ast.Call) and sub in parent.args:
            callee = resolve_call(ctx, parent)
            if callee is not None and callee.node is node and parent.args.index(sub) == _position(node, name):
                continue  # the function calls itself on a part of the input
            if _only_runs_argument(ctx, parent, sub):
                continue
        return False
    return True


def _position(function: ast.AST, name: str) -> int:
    params = [a.arg for a in function.args.posonlyargs + function.args.args]
    return params.index(name) if name in params else -1


def through_model_keeping(expr: ast.AST) -> ast.AST | None:
    """Look through what hands back its receiver, a module: a move or cast (``.to(device)``,
    ``.cuda()``) or ``.eval()``."""
    found = method_call(expr)
    if found is not None and found[0] in _KEEPING_MODEL_METHODS:
        return found[1]
    return None
