"""TL010 loss-accumulated-with-graph."""

from __future__ import annotations

import ast
from collections import defaultdict

from torchlint.analysis.callgraph import call_graph, resolve_local_call
from torchlint.analysis.dataflow import Binding, dataflow
from torchlint.analysis.imports import symbol
from torchlint.analysis.nodes import last_name, method_call, returns_of
from torchlint.engine.rule import Message, Rule, register
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.calls import call_events
from torchlint.torchmodel.events import BACKWARD_KINDS
from torchlint.torchmodel.gradmode import lexical_grad_disabler
from torchlint.torchmodel.iterations import iterations
from torchlint.torchmodel.roles import Role, object_roles

# Methods/functions whose result is a plain number or a tensor cut from the graph.
CONVERTING_METHODS = frozenset({"item", "tolist", "detach", "detach_", "numpy"})
CONVERTING_FUNCTIONS = frozenset({"float", "int", "bool", "round", "len", "math.fsum"})
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
# Calls that combine their (first) argument's tensors into one: sum(losses), torch.stack(losses).
AGGREGATING_FUNCTIONS = frozenset({"sum", "torch.sum", "torch.stack", "torch.cat", "torch.mean", "torch.add"})
# What a list of losses is summed or averaged with later.
LIST_AGGREGATORS = frozenset({"sum", "stack", "cat", "mean", "average", "fsum", "tensor", "nanmean"})


@register
class LossAccumulatedWithGraph(Rule):
    code = "TL010"
    name = "loss-accumulated-with-graph"
    severity = "warning"
    summary = "A running total keeps every iteration's autograd graph alive."
    what = """
        Reports, inside a loop, a running total of a loss tensor that is still attached
        to the autograd graph: `total += loss`, `total = total + loss`,
        `meter[k] += v` over a dict of losses, or `losses.append(loss)` when the list is
        summed or averaged later — where `loss` is the value sent to `backward()` (or a
        loss computed in a function that runs backward) and no `.item()`, `.detach()`
        or `float()` cuts it from the graph. A total kept on `self` (or in a global)
        by a method the training loop calls once per batch (`self.running_loss +=
        loss` in `train_step`) counts as well. Totals computed under `torch.no_grad()`,
        and sums that are themselves backpropagated (several losses added into one),
        are fine.
    """
    why = """
        A tensor that requires grad carries its `grad_fn` and, through it, the graph
        of the iteration that produced it. Adding it to a running total links every
        iteration's graph into one growing chain, so memory use climbs for the whole
        epoch (and the "running loss" is itself a tensor with history). This is the
        first item of PyTorch's FAQ on out-of-memory errors.
    """
    example = """
        running_loss = 0.0
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            running_loss += loss
    """
    instead = """
        running_loss = 0.0
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
    """
    VALID = [
        """
def train(model, loader, criterion, optimizer):
    running_loss = 0.0
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        running_loss += loss.item() * x.size(0)
    return running_loss
""",
        """
def step(model, heads, x, ys, optimizer):
    loss = 0
    for head, y in zip(heads, ys):
        loss += head(model(x), y)
    loss.backward()
    optimizer.step()
""",
    ]
    INVALID = [
        """
def train(model, loader, criterion, optimizer):
    total = 0
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss  # expect: TL010
    return total / len(loader)
""",
        """
import torch
def train(model, loader, optimizer):
    losses = []
    for batch in loader:
        loss_dict = model(batch)
        loss = sum(loss_dict.values())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss)  # expect: TL010
    return torch.stack(losses).mean()
""",
    ]

    def check(self, ctx):
        candidates = _candidates(ctx)
        if not candidates:
            return
        graphs = _Graphs(ctx)
        flow = graphs.flow
        training_loops = None
        for scope, found in candidates.items():
            for node, accumulator, added in found:
                if lexical_grad_disabler(ctx, node) is not None:
                    continue
                # Only totals kept across training iterations grow without bound; a few
                # micro-steps summed inside one step (MC samples, closures) do not.
                if training_loops is None:
                    training_loops = set(iterations(ctx).training_loops)
                if not _kept_across_iterations(ctx, node, accumulator, training_loops):
                    continue
                graph = graphs.of(scope)
                if graph.accumulator_is_backwarded(node, accumulator):
                    continue
                if not graph.attached(added, node):
                    continue
                if isinstance(node, ast.Call) and not _aggregated_later(ctx, flow, scope, accumulator):
                    continue
                yield self.report(node, self._message(ctx, node, accumulator, added), evidence=(accumulator, added))

    @staticmethod
    def _message(ctx, node, accumulator, added) -> Message:
        value = ctx.segment(added) or "loss"
        if len(value) > 40:
            value = value[:37] + "..."
        if isinstance(node, ast.Call):
            return Message(
                f"`{ctx.segment(node)}` keeps a tensor still attached to the autograd graph in a list that "
                "grows across iterations",
                why="every iteration's graph stays alive and memory grows",
                help=f"append `{value}.item()` (or `{value}.detach()`) instead",
            )
        target = ctx.segment(accumulator) or "total"
        return Message(
            f"`{target}` accumulates `{value}`, a tensor still attached to the autograd graph",
            why="every iteration's graph stays alive and memory grows until the loop ends",
            help=f"add `{value}.item()` (or `{value}.detach()`) instead",
        )


def _kept_across_iterations(ctx, node, accumulator, training_loops) -> bool:
    """The total outlives training iterations: it grows inside a training loop, or it is kept on
    ``self`` (or in a global) by a function the training loop calls once per batch."""
    if any(loop in training_loops for loop in ctx.enclosing_loops(node)):
        return True
    if not _outlives_its_function(ctx, accumulator):
        return False
    func = ctx.enclosing_function(node)
    for site in call_graph(ctx).callers(func) if func is not None else ():
        if any(loop in training_loops for loop in ctx.enclosing_loops(site)):
            return True
    return False


def _outlives_its_function(ctx, accumulator) -> bool:
    """``self.total`` or a name the function declares ``global``."""
    if isinstance(accumulator, ast.Attribute) and isinstance(accumulator.value, ast.Name):
        return accumulator.value.id == "self"
    func = ctx.enclosing_function(accumulator)
    if isinstance(accumulator, ast.Name) and func is not None:
        return any(isinstance(n, ast.Global) and accumulator.id in n.names for n in ast.walk(func))
    return False


def _candidates(ctx) -> dict[ast.AST, list[tuple[ast.AST, ast.AST, ast.AST]]]:
    """Accumulations inside loops (or into state that outlives a function, which a loop may call
    once per batch), by scope: (node to report, accumulator, value added)."""
    flow = dataflow(ctx)
    found: dict[ast.AST, list] = defaultdict(list)
    for node in ctx.nodes(ast.AugAssign):
        if (
            isinstance(node.op, ast.Add)
            and _plausible_value(node.value)
            and (ctx.enclosing_loops(node) or _outlives_its_function(ctx, node.target))
        ):
            found[flow.scope_of(node)].append((node, node.target, node.value))
    for node in ctx.nodes(ast.Assign):
        value = node.value
        if len(node.targets) != 1 or not isinstance(value, ast.BinOp) or not isinstance(value.op, ast.Add):
            continue
        target = symbol(node.targets[0])
        if target is None:
            continue
        for same, other in ((value.left, value.right), (value.right, value.left)):
            if symbol(same) == target and _plausible_value(other) and ctx.enclosing_loops(node):
                found[flow.scope_of(node)].append((node, node.targets[0], other))
                break
    for stmt in ctx.nodes(ast.Expr):
        call = stmt.value
        found_method = method_call(call)
        if (
            found_method is not None
            and found_method[0] == "append"
            and isinstance(found_method[1], ast.Name)
            and len(call.args) == 1
            and _plausible_value(call.args[0])
            and ctx.enclosing_loops(stmt)
        ):
            found[flow.scope_of(stmt)].append((call, found_method[1], call.args[0]))
    return found


def _plausible_value(expr: ast.AST) -> bool:
    """Cheap filter: a value that could be a loss tensor (not a literal, not a string)."""
    return not isinstance(expr, (ast.Constant, ast.JoinedStr, ast.List, ast.Tuple, ast.Dict, ast.Compare))


def _backward_args_by_scope(ctx) -> dict[ast.AST, list[tuple[ast.AST, ast.AST]]]:
    """(loss expression, call) of every backward (and hidden-backward helper call), by scope."""
    calls = call_events(ctx)
    flow = dataflow(ctx)
    found: dict[ast.AST, list] = defaultdict(list)
    for call in ctx.calls:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in torch_names.BACKWARD_METHODS:
            event = calls.classify(call)
        elif _may_be_opaque_step(call):
            event = calls.opaque_step(call)  # `loss_scaler(loss, optimizer, ...)` hides backward
        else:
            continue
        if event is not None and event.kind in BACKWARD_KINDS and event.arg is not None:
            found[flow.scope_of(call)].append((event.arg, call))
    return found


def _may_be_opaque_step(call: ast.Call) -> bool:
    """Cheap filter before asking the training model: a loss-named argument among several."""
    if len(call.args) + len(call.keywords) < 2:
        return False
    args = [*call.args, *(kw.value for kw in call.keywords)]
    return any((last_name(arg) or "").startswith("loss") for arg in args)


def _aggregated_later(ctx, flow, scope, accumulator: ast.Name) -> bool:
    """Whether the list ``accumulator`` is passed to ``sum``/``torch.stack``/``np.mean``... in its scope."""
    for call in ctx.calls:
        if not call.args or not isinstance(call.args[0], ast.Name) or call.args[0].id != accumulator.id:
            continue
        if last_name(call.func) in LIST_AGGREGATORS and flow.scope_of(call) is scope:
            return True
    return False


class _Graphs:
    """The per-scope :class:`_GraphValues` of one file, built on demand."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.flow = dataflow(ctx)
        self._backward_args = _backward_args_by_scope(ctx)
        self._graphs: dict[ast.AST, _GraphValues] = {}

    def of(self, scope: ast.AST) -> _GraphValues:
        graph = self._graphs.get(scope)
        if graph is None:
            graph = self._graphs[scope] = _GraphValues(self, scope, self._backward_args.get(scope, []))
        return graph


class _GraphValues:
    """Which bindings of one scope hold tensors attached to a graph that is backpropagated."""

    MAX_DEPTH = 8

    def __init__(self, graphs: _Graphs, scope: ast.AST, backward_args):
        self.graphs = graphs
        self.ctx = graphs.ctx
        self.flow = graphs.flow
        self.scope = scope
        self.backwarded: set[tuple[str, int]] = set()
        self.backwarded_symbols: set[str] = set()
        for arg, call in backward_args:
            self._mark(arg, call, 0)

    @staticmethod
    def _key(binding: Binding) -> tuple[str, int]:
        return binding.name, id(binding.stmt)

    # ----- backwards: what feeds backward() ---------------------------------------------------
    def _mark(self, expr: ast.AST, at: ast.AST, depth: int) -> None:
        if depth > self.MAX_DEPTH or expr is None:
            return
        key = symbol(expr)
        if key is not None and not isinstance(expr, ast.Name):
            self.backwarded_symbols.add(key)
        if isinstance(expr, ast.Name):
            for binding in self.flow.reaching(expr.id, at):
                key = self._key(binding)
                if key in self.backwarded:
                    continue
                self.backwarded.add(key)
                if binding.kind in ("assign", "walrus") and binding.value is not None:
                    self._mark(binding.value, binding.stmt, depth + 1)
                elif binding.kind == "augassign":
                    self._mark(binding.source, binding.stmt, depth + 1)
                    self._mark(ast.Name(id=binding.name, ctx=ast.Load()), binding.stmt, depth + 1)
                elif binding.kind == "for" and binding.source is not None:
                    self._mark(binding.source, binding.stmt, depth + 1)
        elif isinstance(expr, ast.BinOp):
            self._mark(expr.left, at, depth + 1)
            self._mark(expr.right, at, depth + 1)
        elif isinstance(expr, ast.UnaryOp):
            self._mark(expr.operand, at, depth + 1)
        elif isinstance(expr, (ast.Subscript, ast.Attribute)):
            self._mark(expr.value, at, depth + 1)
        elif isinstance(expr, (ast.List, ast.Tuple)):
            for element in expr.elts:
                self._mark(element, at, depth + 1)
        elif isinstance(expr, (ast.GeneratorExp, ast.ListComp)):
            self._mark(expr.elt, at, depth + 1)
            for generator in expr.generators:
                self._mark(generator.iter, at, depth + 1)
        elif isinstance(expr, ast.Call):
            found = method_call(expr)
            if found is not None and found[0] in GRAPH_KEEPING_METHODS:
                self._mark(found[1], at, depth + 1)
            elif self._aggregating(expr):
                for arg in expr.args:
                    self._mark(arg.value if isinstance(arg, ast.Starred) else arg, at, depth + 1)

    def _aggregating(self, call: ast.Call) -> bool:
        qual = self.ctx.call_qualname(call)
        if qual in AGGREGATING_FUNCTIONS:
            return True
        return isinstance(call.func, ast.Name) and call.func.id == "sum" and qual is None

    def accumulator_is_backwarded(self, node: ast.AST, accumulator: ast.AST) -> bool:
        """The running total itself is sent to backward (several losses summed on purpose)."""
        if isinstance(accumulator, ast.Name):
            if isinstance(node, ast.Call):  # list.append: the list's bindings
                return any(self._key(b) in self.backwarded for b in self.flow.reaching(accumulator.id, node))
            return (accumulator.id, id(node)) in self.backwarded
        key = symbol(accumulator)
        return key is not None and key.split("[", 1)[0] in {s.split("[", 1)[0] for s in self.backwarded_symbols}

    # ----- forwards: is a value attached? -------------------------------------------------------
    def attached(self, expr: ast.AST, at: ast.AST, depth: int = 0) -> bool:
        if depth > self.MAX_DEPTH:
            return False
        if isinstance(expr, ast.Name):
            for binding in self.flow.reaching(expr.id, at):
                if self._key(binding) in self.backwarded and not _converted(binding.value):
                    return True
                if binding.kind in ("assign", "walrus") and binding.value is not None:
                    if self.attached(binding.value, binding.stmt, depth + 1):
                        return True
                elif binding.kind == "for" and binding.source is not None:
                    if self.attached(binding.source, binding.stmt, depth + 1):
                        return True
            return False
        if isinstance(expr, ast.BinOp):
            return self.attached(expr.left, at, depth + 1) or self.attached(expr.right, at, depth + 1)
        if isinstance(expr, ast.UnaryOp):
            return self.attached(expr.operand, at, depth + 1)
        if isinstance(expr, ast.Subscript):
            return self.attached(expr.value, at, depth + 1)
        if isinstance(expr, ast.Attribute):
            if expr.attr in ("data", "shape", "grad", "device", "dtype"):
                return False
            return self.attached(expr.value, at, depth + 1)
        if isinstance(expr, ast.Call):
            if _converted(expr):
                return False
            found = method_call(expr)
            if found is not None and found[0] in GRAPH_KEEPING_METHODS:
                return self.attached(found[1], at, depth + 1)
            if self._aggregating(expr) and expr.args:
                return self.attached(expr.args[0], at, depth + 1)
            return self._is_loss_call(expr) or self._returns_attached(expr, depth)
        return False

    def _returns_attached(self, call: ast.Call, depth: int) -> bool:
        """A helper of this file (``loss = train_step(batch)``) that returns a graph-attached loss."""
        function = resolve_local_call(self.ctx, call)
        if function is None or function is self.scope or depth > 2:
            return False
        callee = self.graphs.of(function)
        return any(
            node.value is not None and callee.attached(node.value, node, depth + 3) for node in returns_of(function)
        )

    def _is_loss_call(self, call: ast.Call) -> bool:
        qual = self.ctx.call_qualname(call)
        if qual is not None:
            prefix = torch_names.FUNCTIONAL
            return qual.startswith(prefix) and qual[len(prefix) :] in torch_names.FUNCTIONAL_LOSSES
        func = call.func
        if isinstance(func, (ast.Name, ast.Attribute)) and symbol(func):
            return object_roles(self.ctx).role_of(func) == Role.CRITERION
        return False


def _converted(expr: ast.AST | None) -> bool:
    """``x.item()``, ``x.detach()``, ``float(x)``, ``x.data`` (possibly followed by graph-keeping methods)."""
    while expr is not None:
        if isinstance(expr, ast.Attribute) and expr.attr == "data":
            return True
        if not isinstance(expr, ast.Call):
            return False
        func = expr.func
        if isinstance(func, ast.Name):
            return func.id in CONVERTING_FUNCTIONS
        found = method_call(expr)
        if found is None:
            return False
        if found[0] in CONVERTING_METHODS:
            return True
        if found[0] not in GRAPH_KEEPING_METHODS:
            return False
        expr = found[1]
    return False
