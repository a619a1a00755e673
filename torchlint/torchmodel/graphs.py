"""Which values carry an autograd graph, told from data flow.

``graph_values(ctx).state(expr, at)`` answers with a :class:`Graph`:

* ``ATTACHED`` -- the value is derived from something that carries a graph: the output of a model
  call, a loss (a criterion's call, a functional loss) unless it is a loss without parameters of
  its own whose operands are all plain, a value sent to ``backward()`` (backward
  needs a graph, so the argument and what it is by identity -- names, graph-keeping methods such
  as ``.mean()``, a scaling by a plain number -- carry one), what a function of the file or the
  project returns when its returns carry one; and tensor operations on such a value (arithmetic,
  indexing, the fields of a model's output, ``sum``/``torch.stack``, iteration over them).
* ``PLAIN`` -- the value carries no graph, whatever flows into it: literals, comparisons,
  ``len()``, ``float()``, ``.item()``, ``.detach()``, shapes and sizes, ``range()``, fresh tensors
  from factories (``torch.zeros``), the batches a loop draws from a ``DataLoader``, anything
  computed in a no-grad region, and sums of such.
* ``UNKNOWN`` -- anything else: parameters, opaque calls (``tyro.cli(Args)``), an element of the
  tuple a criterion the linter cannot read returns (``loss, dice = criterion(out, y)``: which one is
  the loss is not shown, unless a backward proves it), and the attributes
  of objects the linter knows nothing of (``args.num_envs``). Unknown is never taken for attached:
  that the loss is built from ``args.ent_coef * entropy`` says nothing about ``args``.

``feeds_backward`` asks a different, wider question: whether a total may flow into a
``backward()`` (every operand of the loss is followed), so that a sum of losses built to be
backpropagated is told from a running total kept for logging.
"""

from __future__ import annotations

import ast
import enum
from collections import defaultdict
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import resolve_callee
from torchlint.analysis.constants import possible_values
from torchlint.analysis.dataflow import Binding, dataflow, resolve_instance_call, resolve_instance_method, value_kept
from torchlint.analysis.entry_rewrites import rewritten_entries
from torchlint.analysis.imports import symbol
from torchlint.analysis.nodes import argument, last_name, method_call, returns_of
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.calls import call_events
from torchlint.torchmodel.constructors import constructor_role, prepared_element, same_module
from torchlint.torchmodel.events import BACKWARD_KINDS
from torchlint.torchmodel.forward_calls import ForwardCalls
from torchlint.torchmodel.gradmode import lexical_grad_disabler
from torchlint.torchmodel.provenance import SYNTHETIC_FACTORIES
from torchlint.torchmodel.roles import Role, object_roles
from torchlint.torchmodel.summaries import backpropagated_arguments

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext


class Graph(enum.IntEnum):
    """What a value holds, ordered so that joining two possibilities is their ``max``."""

    PLAIN = 0
    UNKNOWN = 1
    ATTACHED = 2


# Methods whose result is a plain number or a tensor cut from the graph (integer and boolean
# tensors cannot require grad; sizes and indices are ints).
CONVERTING_METHODS = frozenset(
    {
        "item",
        "tolist",
        "detach",
        "detach_",
        "numpy",
        "size",
        "dim",
        "numel",
        "nelement",
        "element_size",
        "argmax",
        "argmin",
        "long",
        "int",
        "bool",
        "eq",
        "ne",
        "gt",
        "ge",
        "lt",
        "le",
        "isnan",
        "isinf",
        "isfinite",
    }
)
# Builtins (and a few library functions) that return plain numbers.
CONVERTING_FUNCTIONS = frozenset(
    {"float", "int", "bool", "round", "len", "math.fsum", "range", "str", "time.time", "time.perf_counter"}
)
# Calls whose result is a Python number (not a tensor that may have been filled in place).
_NUMBER_METHODS = frozenset({"item", "size", "dim", "numel", "nelement", "element_size"})
_NUMBER_FUNCTIONS = frozenset({"len", "int", "float", "round"})
# Methods whose result stays on the graph of their receiver.
GRAPH_KEEPING_METHODS = frozenset(
    {
        "float",
        "double",
        "half",
        "bfloat16",
        "to",
        "cpu",
        "cuda",
        "mean",
        "sum",
        "clone",
        "view",
        "reshape",
        "squeeze",
        "unsqueeze",
        "abs",
        "pow",
        "sqrt",
        "exp",
        "log",
        "mul",
        "div",
        "add",
        "sub",
        "values",
        "items",
        "contiguous",
        "flatten",
    }
)
# Of those, the ones whose arguments are operands too (``a.add(b)`` carries ``b``'s graph).
_ARITHMETIC_METHODS = frozenset({"pow", "mul", "div", "add", "sub"})
# Attributes that never carry a graph, whatever the object.
PLAIN_ATTRIBUTES = frozenset(
    {"data", "shape", "grad", "device", "dtype", "requires_grad", "is_cuda", "ndim", "grad_fn", "is_leaf"}
)
# Calls that combine their argument's tensors into one: sum(losses), torch.stack(losses).
AGGREGATING_FUNCTIONS = frozenset({"sum", "torch.sum", "torch.stack", "torch.cat", "torch.mean", "torch.add"})
# Torch functions that build a fresh tensor (no graph unless asked with requires_grad=True) or
# return plain numbers, indices or booleans.
_FRESH_TENSOR_FUNCTIONS = SYNTHETIC_FACTORIES | frozenset(
    "torch." + name
    for name in (
        "tensor",
        "arange",
        "linspace",
        "randperm",
        "argmax",
        "argmin",
        "numel",
        "is_tensor",
        "equal",
        "isnan",
        "isinf",
        "isfinite",
        "eq",
    )
)
# How far a value is followed (names, operands, returns) before it is unknown: deep enough for a
# loss of a restoration computed from loader batches moved in a comprehension.
MAX_DEPTH = 10


class GraphValues:
    """Graph states of the values of one file; get the shared instance with ``graph_values(ctx)``."""

    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self.flow = dataflow(ctx)
        self.forward = ForwardCalls(ctx)
        self._memo: dict = {}
        self._active: set = set()
        self._active_augassigns: set = set()
        # The question being answered met a value still being answered, or went too deep: its
        # answer may be incomplete and is not kept.
        self._incomplete = False
        # What a backward() proves attached: bindings (name, statement), and fields (``out.loss``,
        # ``losses["total"]``) with the binding of the name they are read from.
        self.proved: set[tuple[str, int]] = set()
        self.proved_fields: set[tuple[str, tuple[str, int]]] = set()
        # What may flow into a backward() at all (the wider question): the same, by scope.
        self.fed: set[tuple[str, int]] = set()
        self.fed_symbols: dict[ast.AST, set[str]] = defaultdict(set)
        self._proving = False
        self._proofs_done = False

    def _prepare(self) -> None:
        """Record what the file's backward() calls prove and feed, once, on the first question
        (not in ``__init__``: proving asks states, which may ask this file's instance again
        through a function's returns)."""
        if self._proofs_done or self._proving:
            return
        self._proving = True
        try:
            for loss, call in backward_losses(self.ctx):
                self._prove(loss, call, 0)
                self._feed(loss, call, 0)
        finally:
            self._proving = False
            self._proofs_done = True
            self._memo.clear()  # states asked while proving may change with the proofs

    # ----- the state of a value ---------------------------------------------------------------
    def state(self, expr: ast.AST, at: ast.AST | None = None, depth: int = 0) -> Graph:
        """Whether the value of ``expr`` (read at ``at``, by default where it is written) carries
        an autograd graph."""
        self._prepare()
        if depth > MAX_DEPTH:
            self._incomplete = True
            return Graph.UNKNOWN
        key = (id(expr), id(at))
        found = self._memo.get(key)
        if found is not None:
            return found
        if key in self._active:
            self._incomplete = True
            return Graph.PLAIN  # a value fed by itself (``total += x`` in a loop): what else feeds it decides
        outer_incomplete, self._incomplete = self._incomplete, False
        self._active.add(key)
        try:
            found = self._state(expr, at or expr, depth)
        finally:
            self._active.discard(key)
        if not self._incomplete:
            self._memo[key] = found
        self._incomplete = self._incomplete or outer_incomplete
        return found

    def _join(self, exprs, at, depth: int) -> Graph:
        result = Graph.PLAIN
        for expr in exprs:
            result = max(result, self.state(expr, at, depth + 1))
            if result is Graph.ATTACHED:
                break
        return result

    def _state(self, expr: ast.AST, at: ast.AST, depth: int) -> Graph:
        if isinstance(expr, (ast.Constant, ast.JoinedStr, ast.Compare)):
            return Graph.PLAIN
        if isinstance(expr, ast.Name):
            return self._name(expr.id, at, depth)
        if isinstance(expr, ast.NamedExpr):
            return self.state(expr.value, expr, depth + 1)
        if isinstance(expr, ast.Starred):
            return self.state(expr.value, at, depth + 1)
        if isinstance(expr, ast.Attribute):
            return self._attribute(expr, at, depth)
        if isinstance(expr, ast.Subscript):
            rewritten = rewritten_entries(self.ctx, expr, at)
            if rewritten is not None:  # `for k, v in d.items(): d[k] = v.item()` before the read
                return self.state(rewritten, rewritten, depth + 1)
            return Graph.ATTACHED if self._proved_field(expr, at) else self.state(expr.value, at, depth + 1)
        if isinstance(expr, ast.IfExp):
            return self._join((expr.body, expr.orelse), at, depth)
        if isinstance(expr, ast.BoolOp):
            return self._join(expr.values, at, depth)
        if isinstance(expr, ast.Tuple):
            return self._join(expr.elts, at, depth)
        if isinstance(expr, (ast.List, ast.Set, ast.Dict)):
            # A mutable container may be filled later (`losses = []`, then appends): what it is
            # written with says whether it carries a graph, never that it does not.
            elements = expr.values if isinstance(expr, ast.Dict) else expr.elts
            return Graph.ATTACHED if self._join(elements, at, depth) is Graph.ATTACHED else Graph.UNKNOWN
        if isinstance(expr, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            return self.state(expr.elt, expr.elt, depth + 1)
        if isinstance(expr, (ast.BinOp, ast.UnaryOp, ast.Call)) and lexical_grad_disabler(self.ctx, expr) is not None:
            return Graph.PLAIN  # computed with autograd off
        if isinstance(expr, ast.UnaryOp):
            return Graph.PLAIN if isinstance(expr.op, ast.Not) else self.state(expr.operand, at, depth + 1)
        if isinstance(expr, ast.BinOp):
            return self._join((expr.left, expr.right), at, depth)
        if isinstance(expr, ast.Call):
            return self._call(expr, at, depth)
        return Graph.UNKNOWN

    def _name(self, name: str, at: ast.AST, depth: int) -> Graph:
        bindings = self.flow.reaching(name, at)
        if not bindings:
            return Graph.UNKNOWN  # a builtin, a star import
        return max(self._binding(b, depth + 1) for b in bindings)

    def _binding(self, binding: Binding, depth: int) -> Graph:
        if _key(binding) in self.proved:
            return Graph.ATTACHED
        kind = binding.kind
        if kind in ("assign", "walrus"):
            return self.state(binding.value, binding.stmt, depth) if binding.value is not None else Graph.UNKNOWN
        if kind == "augassign":  # the value before, plus what is added
            added = self.state(binding.source, binding.stmt, depth + 1)
            if added is Graph.ATTACHED:
                return added
            if binding.stmt in self._active_augassigns:  # the total read again around its loop
                self._incomplete = True
                return added
            self._active_augassigns.add(binding.stmt)
            try:
                return max(added, self._name(binding.name, binding.stmt, depth + 1))
            finally:
                self._active_augassigns.discard(binding.stmt)
        if kind == "for" and binding.source is not None:
            # A comprehension's iterable is read where it is written (its clause is no statement).
            at = binding.source if isinstance(binding.stmt, ast.comprehension) else binding.stmt
            return self._element(binding.source, binding.index, at, depth)
        if kind == "unpack" and binding.source is not None:
            if binding.index is None:
                return self.state(binding.source, binding.stmt, depth)
            return self._item(binding.source, binding.index, binding.stmt, depth)
        return Graph.UNKNOWN

    def _item(self, expr: ast.AST, index: int, at: ast.AST, depth: int) -> Graph:
        """The state of element ``index`` of the tuple ``expr`` evaluates to (``a, b, n = f(x)``):
        the element of a tuple written out, of what a function returns, of a name holding either."""
        if depth > MAX_DEPTH:
            self._incomplete = True
            return Graph.UNKNOWN
        if isinstance(expr, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in expr.elts):
            return self.state(expr.elts[index], at, depth + 1) if index < len(expr.elts) else Graph.UNKNOWN
        if isinstance(expr, ast.Call):
            returned = self._call_returns(expr, index, depth)
            if returned is not None:
                return returned
            if self._plain_model_output(expr, index, depth):
                return Graph.PLAIN
            if self.ctx.call_qualname(expr) is None and self._is_loss_call(expr, None):
                # A criterion handing back a tuple (``loss, per_class = criterion(out, y)``): its
                # ``forward`` tells each element; of one the linter cannot read, which element is
                # the loss and which a detached statistic is not shown. What a backward() proves
                # (the unpacked name sent to it) stays attached.
                return self._criterion_element(expr, index, depth)
        if isinstance(expr, ast.Name):
            bindings = self.flow.reaching(expr.id, at)
            if bindings and all(b.kind in ("assign", "walrus") and b.value is not None for b in bindings):
                return max(self._item(b.value, index, b.stmt, depth + 1) for b in bindings)
        return self.state(expr, at, depth + 1)

    def _element(self, iterable: ast.AST, index: int | None, at: ast.AST, depth: int) -> Graph:
        """What iterating ``iterable`` binds (element ``index`` of an unpacked item)."""
        if isinstance(iterable, ast.Call):
            if index == 0 and (
                last_name(iterable.func) == "enumerate" or (method_call(iterable) or ("",))[0] == "items"
            ):
                return Graph.PLAIN  # the counter of enumerate(), the keys of dict.items()
            if isinstance(iterable.func, ast.Name) and iterable.func.id in ("enumerate", "zip", "reversed"):
                return max((self._element(arg, None, at, depth + 1) for arg in iterable.args), default=Graph.PLAIN)
        if self._is_loader(iterable, at):
            return Graph.PLAIN  # batches collated from a dataset: data, not the result of a computation
        return self.state(iterable, at, depth + 1)

    def _is_loader(self, expr: ast.AST, at: ast.AST) -> bool:
        """Whether ``expr`` is shown to be a ``DataLoader``: every value that may reach it is built
        by one, directly or as an element of a container of loaders (``loaders[phase]``)."""
        if isinstance(expr, ast.Subscript) and not isinstance(expr.slice, ast.Slice):
            containers = self.flow.origins(expr.value, at=at)
            elements = [e for c in containers for e in _container_values(c)]
            return bool(elements) and None not in elements and all(self._loader_call(e) for e in elements)
        origins = self.flow.origins(expr, at=at)
        return bool(origins) and all(self._loader_call(o) for o in origins)

    def _loader_call(self, expr: ast.AST | None) -> bool:
        return isinstance(expr, ast.Call) and self.ctx.call_qualname(expr) == torch_names.DATALOADER

    def _attribute(self, expr: ast.Attribute, at: ast.AST, depth: int) -> Graph:
        if expr.attr in PLAIN_ATTRIBUTES:
            return Graph.PLAIN
        if self._proved_field(expr, at):
            return Graph.ATTACHED
        owner = self.flow.self_attribute(expr)
        if owner is not None:  # ``self.x``: what the class assigns to it
            assigned = [b for b in self.flow.attribute_bindings(*owner) if b.kind == "assign" and b.value is not None]
            if not assigned:
                return Graph.UNKNOWN
            return max(self.state(b.value, b.stmt, depth + 1) for b in assigned)
        # A field of an object that carries a graph (``outputs.loss`` of a model's output); of
        # anything else (a config namespace, a module of the file) it is not known.
        base = self.state(expr.value, at, depth + 1)
        return Graph.ATTACHED if base is Graph.ATTACHED else Graph.UNKNOWN

    def _field_bindings(self, expr: ast.AST, at: ast.AST) -> list[tuple[str, tuple[str, int]]]:
        """(symbol, binding of its root name) for each binding of the root that reaches ``at``:
        ``out.loss`` read from ``out = model(x)``. Empty for fields of ``self`` (any method may set
        them) and of anything but a name."""
        key = symbol(expr)
        root = expr
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        if key is None or not isinstance(root, ast.Name) or root.id in ("self", "cls"):
            return []
        return [(key, _key(b)) for b in self.flow.reaching(root.id, at)]

    def _proved_field(self, expr: ast.AST, at: ast.AST) -> bool:
        return bool(self.proved_fields) and any(f in self.proved_fields for f in self._field_bindings(expr, at))

    def _call(self, call: ast.Call, at: ast.AST, depth: int) -> Graph:
        ctx = self.ctx
        kept = value_kept(ctx, call)
        if kept is not None:
            return self.state(kept, at, depth + 1)
        qual = ctx.call_qualname(call)
        func = call.func
        found = method_call(call)
        if found is not None and qual is None:
            method, receiver = found
            if method in CONVERTING_METHODS:
                return Graph.PLAIN
            if method in GRAPH_KEEPING_METHODS:
                operands = [receiver, *call.args] if method in _ARITHMETIC_METHODS else [receiver]
                return self._join(operands, at, depth)
        if isinstance(func, ast.Name) and func.id in CONVERTING_FUNCTIONS and func.id not in ctx.functions:
            return Graph.PLAIN
        if qual in CONVERTING_FUNCTIONS:
            return Graph.PLAIN
        if qual in AGGREGATING_FUNCTIONS or (isinstance(func, ast.Name) and func.id in ("sum", "min", "max")):
            return self._join([a.value if isinstance(a, ast.Starred) else a for a in call.args], at, depth)
        if self._is_loss_call(call, qual):
            return self._loss_result(call, qual, at, depth)
        if self.forward.is_model_call(call):
            return Graph.ATTACHED
        if qual is not None and qual.startswith("torch."):
            if qual in _FRESH_TENSOR_FUNCTIONS and not _asks_for_grad(call):
                return Graph.PLAIN
            if qual in torch_names.GRAPH_ON_REQUEST_FUNCTIONS and not self._graph_requested(call, qual):
                return Graph.PLAIN  # ``torch.autograd.grad(loss, x)``: detached gradients
            # A tensor operation carries the graph of its operands.
            operands = [*call.args, *(kw.value for kw in call.keywords)]
            return Graph.ATTACHED if self._join(operands, at, depth) is Graph.ATTACHED else Graph.UNKNOWN
        returned = self._call_returns(call, None, depth)
        return returned if returned is not None else Graph.UNKNOWN

    def _graph_requested(self, call: ast.Call, qual: str) -> bool:
        """Whether ``call`` may ask for a graph on its results (``create_graph=True``, or a value or
        an unpacking the linter cannot read); not when it leaves the parameter at its false default
        or passes a false constant."""
        name, index = torch_names.GRAPH_ON_REQUEST_FUNCTIONS[qual]
        passed = argument(call, index, name)
        if passed is None:
            return any(kw.arg is None for kw in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args)
        values = possible_values(self.ctx, passed)
        return values is None or any(values)

    def _loss_result(self, call: ast.Call, qual: str | None, at: ast.AST, depth: int) -> Graph:
        """A loss computes from its operands alone when it holds no parameters of its own (a
        functional loss, a built-in ``torch.nn`` loss module): its result carries a graph only if
        an operand may, so operands all shown plain (``.detach()``, loader batches) give a plain
        number. Anything else that may be attached or is not known keeps the loss attached."""
        if not (qual is not None or self._builtin_criterion(call.func)):
            return Graph.ATTACHED  # a project criterion may hold parameters (centre loss, learned weights)
        operands = [a.value if isinstance(a, ast.Starred) else a for a in call.args]
        operands += [kw.value for kw in call.keywords]
        return Graph.PLAIN if operands and self._join(operands, at, depth) is Graph.PLAIN else Graph.ATTACHED

    def _builtin_criterion(self, func: ast.AST) -> bool:
        """Whether the criterion ``func`` is only ever built by a ``torch.nn`` loss class that
        holds no parameters."""
        origins = self.flow.origins(func, at=func)
        return bool(origins) and all(isinstance(o, ast.Call) and self._parameterless_loss(o) for o in origins)

    def _parameterless_loss(self, call: ast.Call) -> bool:
        qual = self.ctx.call_qualname(call) or ""
        return (
            qual.startswith("torch.nn.")
            and qual not in torch_names.LOSSES_WITH_PARAMETERS
            and constructor_role(self.ctx, call) == Role.CRITERION
        )

    def _is_loss_call(self, call: ast.Call, qual: str | None) -> bool:
        if qual is not None:
            prefix = torch_names.FUNCTIONAL
            return qual.startswith(prefix) and qual[len(prefix) :] in torch_names.FUNCTIONAL_LOSSES
        func = call.func
        if isinstance(func, (ast.Name, ast.Attribute)) and symbol(func):
            return object_roles(self.ctx).role_of(func) == Role.CRITERION
        return False

    def _call_returns(self, call: ast.Call, index: int | None, depth: int) -> Graph | None:
        """The state of what the function ``call`` runs returns (element ``index`` of a returned
        tuple), asked in the function's own file; None when the callee cannot be read."""
        callee = resolve_callee(self.ctx, call)
        if callee is None:
            method = resolve_instance_call(self.ctx, call)  # ``compute_loss(pred, y)``: the class's ``__call__``
            callee = (method.ctx, method.node) if method is not None else None
        if callee is None or depth > MAX_DEPTH - 2:
            return None
        callee_ctx, function = callee
        return graph_values(callee_ctx).returned(function, index, depth + 2)

    def _plain_model_output(self, call: ast.Call, index: int, depth: int) -> bool:
        """Element ``index`` of what a model call returns is a plain number: the ``forward`` of the
        project class the model was built from computes it without a graph on every return
        (``lm_loss.item()`` returned beside the loss). Only that proves anything: a model's
        output is otherwise taken to carry the graph."""
        if depth > MAX_DEPTH - 2 or not self.forward.is_model_call(call):
            return False
        return self._forward_element(call, index, depth) is Graph.PLAIN

    def _criterion_element(self, call: ast.Call, index: int, depth: int) -> Graph:
        """Element ``index`` of the tuple the criterion ``call`` returns: plain when the ``forward``
        of the project class it was built from computes it plain on every return (``dice.detach()
        .cpu().numpy()``), attached otherwise; unknown when that ``forward`` cannot be read."""
        if depth > MAX_DEPTH - 2:
            return Graph.UNKNOWN
        element = self._forward_element(call, index, depth)
        if element is None:
            return Graph.UNKNOWN
        # Computed from what the criterion is handed (a model's output) unless shown plain there.
        return Graph.PLAIN if element is Graph.PLAIN else Graph.ATTACHED

    def _forward_element(self, call: ast.Call, index: int, depth: int) -> Graph | None:
        """The state of element ``index`` of what the ``forward`` of the project class the called
        object was built from returns; None when that ``forward`` cannot be found."""
        forward = resolve_instance_method(
            self.ctx,
            call.func,
            "forward",
            lambda expr: same_module(self.ctx, expr),
            parameters=True,
            unpacked=prepared_element,
        )
        if forward is None:
            return None
        return graph_values(forward.ctx).returned(forward.node, index, depth + 2)

    def returned(self, function: ast.AST, index: int | None = None, depth: int = 0) -> Graph:
        """The state of what ``function`` returns (element ``index`` of a returned tuple): attached
        when some return carries a graph, plain when none may."""
        states = []
        for ret in returns_of(function):
            value = ret.value
            if index is not None:
                if value is None or (isinstance(value, ast.Constant) and value.value is None):
                    continue  # `return None` gives the caller nothing to unpack
                states.append(self._item(value, index, ret, depth + 1))
            elif value is None:
                return Graph.UNKNOWN
            else:
                states.append(self.state(value, ret, depth + 1))
        return max(states) if states else Graph.UNKNOWN

    # ----- what backward() proves ---------------------------------------------------------------
    def _prove(self, expr: ast.AST, at: ast.AST, depth: int) -> None:
        """Record what carries a graph because ``expr`` is sent to backward: the value itself and
        what it is by identity, never the operands it was merely computed from."""
        if depth > MAX_DEPTH or expr is None:
            return
        if isinstance(expr, ast.Name):
            for binding in self._new_bindings(expr.id, at, self.proved):
                if binding.kind in ("assign", "walrus") and binding.value is not None:
                    self._prove(binding.value, binding.stmt, depth + 1)
        elif isinstance(expr, (ast.Attribute, ast.Subscript)):
            self.proved_fields.update(self._field_bindings(expr, at))
        elif isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
            self._prove(expr.operand, at, depth + 1)
        elif isinstance(expr, ast.BinOp):
            # ``loss / 4``, ``loss * x.size(0)``: a Python number carries no graph, so the other
            # operand does. (A plain tensor might have been filled in place; it proves nothing.)
            if self._number(expr.right, at, depth) and not self._number(expr.left, at, depth):
                self._prove(expr.left, at, depth + 1)
            elif self._number(expr.left, at, depth) and not self._number(expr.right, at, depth):
                self._prove(expr.right, at, depth + 1)
        elif isinstance(expr, ast.Call):
            kept = value_kept(self.ctx, expr)
            found = method_call(expr)
            if kept is not None:
                self._prove(kept, at, depth + 1)
            elif found is not None and found[0] in GRAPH_KEEPING_METHODS and not expr.args:
                self._prove(found[1], at, depth + 1)
            elif self._aggregating(expr) and len(expr.args) == 1:
                self._prove(expr.args[0], at, depth + 1)  # the container holds what carries the graph

    def _number(self, expr: ast.AST, at: ast.AST, depth: int) -> bool:
        """Whether ``expr`` is a Python number by construction: a numeric literal, ``len()``,
        ``int()``/``float()``/``round()``, ``.item()``, a size (``x.size(0)``, ``x.shape[1]``,
        ``.numel()``), arithmetic of those, or a name only ever bound to one."""
        if depth > MAX_DEPTH:
            return False
        if isinstance(expr, ast.Constant):
            return isinstance(expr.value, (int, float)) and not isinstance(expr.value, bool)
        if isinstance(expr, ast.UnaryOp):
            return self._number(expr.operand, at, depth + 1)
        if isinstance(expr, ast.BinOp):
            return self._number(expr.left, at, depth + 1) and self._number(expr.right, at, depth + 1)
        if isinstance(expr, ast.Subscript):  # ``x.shape[0]``, ``x.size()[0]``
            inner = expr.value
            return (isinstance(inner, ast.Attribute) and inner.attr == "shape") or (
                (method_call(inner) or ("",))[0] == "size"
            )
        if isinstance(expr, ast.Call):
            found = method_call(expr)
            if found is not None and self.ctx.call_qualname(expr) is None:
                return found[0] in _NUMBER_METHODS
            return isinstance(expr.func, ast.Name) and expr.func.id in _NUMBER_FUNCTIONS
        if isinstance(expr, ast.Name):
            bindings = self.flow.reaching(expr.id, at)
            return bool(bindings) and all(
                b.kind == "assign" and b.value is not None and self._number(b.value, b.stmt, depth + 1)
                for b in bindings
            )
        return False

    def _new_bindings(self, name: str, at: ast.AST, marked: set) -> list[Binding]:
        """The bindings of ``name`` reaching ``at`` not in ``marked`` yet, now marked."""
        found = [b for b in self.flow.reaching(name, at) if _key(b) not in marked]
        marked.update(_key(b) for b in found)
        return found

    def _aggregating(self, call: ast.Call) -> bool:
        qual = self.ctx.call_qualname(call)
        if qual in AGGREGATING_FUNCTIONS:
            return True
        return isinstance(call.func, ast.Name) and call.func.id == "sum" and qual is None

    # ----- what may flow into backward() --------------------------------------------------------
    def _feed(self, expr: ast.AST, at: ast.AST, depth: int) -> None:
        # ``depth`` counts the bindings followed, not the operators of one expression: a loss
        # built by arithmetic (``a + 0.5 * b.pow(2).mean()``) reaches as far as a plain one.
        if depth > MAX_DEPTH or expr is None:
            return
        key = symbol(expr)
        if key is not None and not isinstance(expr, ast.Name):
            self.fed_symbols[self.flow.scope_of(at)].add(key)
        if isinstance(expr, ast.Name):
            for binding in self._new_bindings(expr.id, at, self.fed):
                if binding.kind in ("assign", "walrus") and binding.value is not None:
                    self._feed(binding.value, binding.stmt, depth + 1)
                elif binding.kind == "augassign":
                    self._feed(binding.source, binding.stmt, depth + 1)
                    self._feed(ast.Name(id=binding.name, ctx=ast.Load()), binding.stmt, depth + 1)
                elif binding.kind == "for" and binding.source is not None:
                    self._feed(binding.source, binding.stmt, depth + 1)
        elif isinstance(expr, ast.BinOp):
            self._feed(expr.left, at, depth)
            self._feed(expr.right, at, depth)
        elif isinstance(expr, ast.UnaryOp):
            self._feed(expr.operand, at, depth)
        elif isinstance(expr, (ast.Subscript, ast.Attribute)):
            self._feed(expr.value, at, depth)
        elif isinstance(expr, (ast.List, ast.Tuple)):
            for element in expr.elts:
                self._feed(element, at, depth)
        elif isinstance(expr, (ast.GeneratorExp, ast.ListComp)):
            self._feed(expr.elt, at, depth)
            for generator in expr.generators:
                self._feed(generator.iter, at, depth)
        elif isinstance(expr, ast.Call):
            # What a call computes from: the receiver of a graph-keeping method, and every argument
            # (``torch.stack(values)``, a loss function given a list stacked into it).
            found = method_call(expr)
            if found is not None and found[0] in GRAPH_KEEPING_METHODS:
                self._feed(found[1], at, depth)
            for arg in [*expr.args, *(kw.value for kw in expr.keywords)]:
                self._feed(arg.value if isinstance(arg, ast.Starred) else arg, at, depth)

    def feeds_backward(self, node: ast.AST, total: ast.AST) -> bool:
        """Whether the running total ``total``, updated at ``node`` (an augmented assignment,
        ``total = total + x`` or ``total.append(x)``), may itself be sent to backward (several
        losses summed on purpose)."""
        self._prepare()
        if isinstance(total, ast.Name):
            if isinstance(node, ast.Call):  # list.append: the list's bindings
                return any(_key(b) in self.fed for b in self.flow.reaching(total.id, node))
            return (total.id, id(node)) in self.fed
        key = symbol(total)
        fed = self.fed_symbols.get(self.flow.scope_of(node), ())
        return key is not None and key.split("[", 1)[0] in {s.split("[", 1)[0] for s in fed}


def _container_values(container: ast.AST | None) -> list[ast.AST | None]:
    """The values a dict, list or tuple written out (or built by a comprehension) holds; ``[None]``
    for anything else."""
    if isinstance(container, ast.Dict):
        return list(container.values) if None not in container.keys else [None]
    if isinstance(container, (ast.List, ast.Tuple)):
        return [None if isinstance(e, ast.Starred) else e for e in container.elts]
    if isinstance(container, ast.DictComp):
        return [container.value]
    if isinstance(container, (ast.ListComp, ast.GeneratorExp)):
        return [container.elt]
    return [None]


def _key(binding: Binding) -> tuple[str, int]:
    return binding.name, id(binding.stmt)


def _asks_for_grad(call: ast.Call) -> bool:
    return any(
        kw.arg == "requires_grad" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False)
        for kw in call.keywords
    )


def backward_losses(ctx: FileContext) -> list[tuple[ast.AST, ast.Call]]:
    """(loss expression, call) of every backward of the file (computed once)."""
    return ctx.shared("backward-losses", lambda: _backward_arguments(ctx))


def _backward_arguments(ctx: FileContext) -> list[tuple[ast.AST, ast.Call]]:
    """(loss expression, call) of every backward of the file, of the calls of functions the linter
    reads that run backward on what they are handed (``self.optimize(opt, d_loss)``, told by the
    function's summary, not by names), and of the calls that hide one (``loss_scaler(loss,
    optimizer, ...)``, a function the linter cannot read)."""
    calls = call_events(ctx)
    found = []
    for call in ctx.calls:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in torch_names.BACKWARD_METHODS:
            event = calls.classify(call)
        elif (handed := _handed_to_backward(ctx, call)) is not None:
            found.extend((argument, call) for argument in handed)
            continue
        elif _may_be_opaque_step(call):
            event = calls.opaque_step(call)
        else:
            continue
        if event is not None and event.kind in BACKWARD_KINDS and event.arg is not None:
            found.append((event.arg, call))
    return found


def _handed_to_backward(ctx: FileContext, call: ast.Call) -> list[ast.AST] | None:
    """What ``call`` hands to a function that backpropagates it (see ``backpropagated_arguments``);
    None for a call handed no value (nothing to follow) or one whose function the linter cannot read."""
    if not any(not isinstance(arg, ast.Constant) for arg in [*call.args, *(kw.value for kw in call.keywords)]):
        return None
    return backpropagated_arguments(ctx, call)


def _may_be_opaque_step(call: ast.Call) -> bool:
    """Cheap filter before asking the training model: a loss-named argument among several."""
    if len(call.args) + len(call.keywords) < 2:
        return False
    args = [*call.args, *(kw.value for kw in call.keywords)]
    return any((last_name(arg) or "").startswith("loss") for arg in args)


def graph_values(ctx: FileContext) -> GraphValues:
    """The file's graph states, built the first time a rule asks and then shared."""
    return ctx.shared("graph-values", lambda: GraphValues(ctx))
