"""Tensor layouts: which values are permuted views of others, and how many dimensions a value has.

Used by TL008 (view-after-permute). ``Layout(ctx)`` follows values through the file's data flow:
``permuted_origins(expr)`` are the permuting operations (``permute``, ``transpose``, ``.t()``,
``.T``...) that may have produced ``expr``'s value, looking through operations that keep the
strides (slicing, elementwise ops, ``.float()``, ``.clone()``); ``rank(expr)`` is its number of
dimensions when every origin tells the same; ``declared_memory_order(op)`` is the order in memory
of the dimensions of the tensor a permutation permutes, when the code shows it is not the default
(a branch ``if x.is_contiguous(memory_format=torch.channels_last):``, ``x.contiguous(memory_format=...)``).
"""

from __future__ import annotations

import ast

from torchlint.analysis.conditions import conditions_at, consequences
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.nodes import method_call

# Operations whose result shares storage with a reordered stride layout.
PERMUTING_METHODS = frozenset({"permute", "transpose", "t", "swapaxes", "swapdims", "movedim", "moveaxis"})
PERMUTING_ATTRIBUTES = frozenset({"T", "mT", "mH", "H"})
PERMUTING_FUNCTIONS = frozenset(
    {
        "torch.transpose",
        "torch.permute",
        "torch.t",
        "torch.swapaxes",
        "torch.swapdims",
        "torch.movedim",
        "torch.moveaxis",
    }
)
# Elementwise and conversion methods: their result keeps the input's (non-contiguous)
# strides (TensorIterator follows the input layout; `.clone()` and `.to()` default to
# `preserve_format`, which keeps the strides of a permuted tensor).
LAYOUT_KEEPING_METHODS = frozenset(
    {
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "float",
        "half",
        "double",
        "bfloat16",
        "int",
        "long",
        "bool",
        "byte",
        "short",
        "char",
        "to",
        "type",
        "type_as",
        "detach",
        "clone",
        "cpu",
        "cuda",
        "abs",
        "neg",
        "exp",
        "log",
        "sqrt",
        "rsqrt",
        "sigmoid",
        "tanh",
        "relu",
        "clamp",
        "clamp_min",
        "clamp_max",
        "mul",
        "add",
        "sub",
        "div",
        "pow",
        "masked_fill",
        "logical_not",
        "sign",
        "round",
        "floor",
        "ceil",
        "requires_grad_",
    }
)
# Memory formats other than the default: the tensor's dimensions in memory order, outermost first
# (a channels-last NCHW tensor is laid out as NHWC).
MEMORY_FORMAT_ORDERS = {"torch.channels_last": (0, 2, 3, 1), "torch.channels_last_3d": (0, 2, 3, 4, 1)}
# Methods whose result has the memory format their `memory_format=` keyword names.
FORMATTING_METHODS = frozenset({"contiguous", "to", "clone"})
# Functions that resample the spatial dimensions of a batched (N, C, ...) input: the result keeps
# its batch and channel sizes.
RESAMPLING_FUNCTIONS = frozenset(
    {
        "torch.nn.functional.interpolate",
        "torch.nn.functional.upsample",
        "torch.nn.functional.upsample_nearest",
        "torch.nn.functional.upsample_bilinear",
    }
)
# Reductions along one dimension that keep it when asked (`keepdim=True`): it then has size 1.
KEEPDIM_REDUCTIONS = frozenset({"max", "min", "argmax", "argmin", "amax", "amin", "kthvalue", "median", "mode"})
# `topk(k, dim)`: values and indices with the input's rank, `dim` of size `k`.
TOP_K = "topk"
# Reductions that return (values, indices): an element of the result (`out.topk(k)[1]`,
# `_, pred = out.topk(k)`, `.indices`) has the sizes of the whole.
PAIR_RESULTS = frozenset({"topk", "max", "min", "kthvalue", "median", "mode", "sort"})
# Operations whose result has a known number of dimensions.
SHAPE_METHODS = frozenset({"view", "reshape", "expand", "new_zeros", "new_ones", "new_empty", "new_full"})
SHAPE_FACTORIES = frozenset(
    {"torch.zeros", "torch.ones", "torch.empty", "torch.randn", "torch.rand", "torch.full", "torch.randint"}
)
# Functions whose result has the rank of their first argument (attention outputs, matmul).
RANK_OF_FIRST_ARGUMENT = frozenset(
    {
        "torch.nn.functional.scaled_dot_product_attention",
        "torch.matmul",
        "torch.softmax",
        "torch.nn.functional.softmax",
        "torch.nn.functional.dropout",
        "torch.sigmoid",
        "torch.tanh",
        "torch.relu",
    }
)
# Splitting a tensor into pieces unpacked into names: rank change from the whole to each piece.
PIECE_RANK_CHANGE = {"unbind": -1, "chunk": 0, "split": 0, "tensor_split": 0}
RANK_KEEPING_METHODS = LAYOUT_KEEPING_METHODS | PERMUTING_METHODS | {"contiguous", "softmax", "log_softmax"}


def is_minus_one(expr: ast.AST) -> bool:
    return (
        isinstance(expr, ast.UnaryOp)
        and isinstance(expr.op, ast.USub)
        and isinstance(expr.operand, ast.Constant)
        and expr.operand.value == 1
    )


def shape_args(call: ast.Call) -> list[ast.AST] | None:
    """The sizes passed to ``view``/``reshape``-like calls, when written out; None otherwise."""
    args = call.args
    if call.keywords or any(isinstance(a, ast.Starred) for a in args) or not args:
        return None
    if len(args) == 1:
        only = args[0]
        if isinstance(only, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in only.elts):
                return None
            return list(only.elts)
        if (isinstance(only, ast.Constant) and isinstance(only.value, int)) or is_minus_one(only):
            return [only]
        return None  # a shape held in a variable, or a dtype: cannot tell
    return list(args)


def _unpacked_call(call: ast.AST, index: int) -> ast.AST:
    """A name unpacked from a call's results (``_, pred = out.topk(k, 1)``) holds a value that call made."""
    return call


class Layout:
    """Layout facts for one file: which expressions hold permuted views, and ranks."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.flow = dataflow(ctx)
        self._shape_unpacks: dict[ast.AST, dict[str, list[tuple[ast.AST, int]]]] = {}

    # ----- permuted origins -----------------------------------------------------------------
    def permuting_op(self, expr: ast.AST) -> ast.AST | None:
        """``expr`` itself if it is a permuting operation."""
        if isinstance(expr, ast.Attribute) and expr.attr in PERMUTING_ATTRIBUTES and isinstance(expr.ctx, ast.Load):
            return expr
        if isinstance(expr, ast.Call):
            qual = self.ctx.call_qualname(expr)
            if qual in PERMUTING_FUNCTIONS:
                return expr
            func = expr.func
            if qual is None and isinstance(func, ast.Attribute) and func.attr in PERMUTING_METHODS:
                if func.attr == "t" and (expr.args or expr.keywords):
                    return None  # `self.t(x)`: a layer named t, not Tensor.t()
                if isinstance(func.value, ast.Name) and func.value.id == "self":
                    return None  # a module's own method that happens to be called permute/transpose
                return expr
        return None

    @staticmethod
    def through_layout_keeping(expr: ast.AST) -> ast.AST | None:
        """Look through operations whose result keeps the input's strides."""
        if isinstance(expr, ast.Subscript):
            index = expr.slice
            parts = index.elts if isinstance(index, ast.Tuple) else [index]
            if all(isinstance(p, ast.Slice) or (isinstance(p, ast.Constant) and p.value is Ellipsis) for p in parts):
                return expr.value
            return None
        found = method_call(expr)
        if found is not None:
            method, receiver = found
            if method in LAYOUT_KEEPING_METHODS and not any(kw.arg == "memory_format" for kw in expr.keywords):
                return receiver
            return None
        if isinstance(expr, ast.BinOp) and not isinstance(expr.op, ast.MatMult):
            if isinstance(expr.right, ast.Constant):
                return expr.left
            if isinstance(expr.left, ast.Constant):
                return expr.right
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
            return expr.operand
        if isinstance(expr, ast.Compare) and len(expr.ops) == 1 and isinstance(expr.comparators[0], ast.Constant):
            return expr.left  # `(scores >= 0.5)`: an elementwise comparison, laid out like the tensor
        return None

    def through_elementwise(self, expr: ast.AST) -> ast.AST | None:
        """Like ``through_layout_keeping``, also through an elementwise operation of two tensors
        (``a + b``, ``a * b``; not ``@``), to its first operand: TensorIterator lays the result out
        in the dimension order of the first operand whose strides tell two dimensions apart, and a
        permuted tensor's strides tell all of them (a broadcast operand's zero strides tell none)."""
        kept = self.through_layout_keeping(expr)
        if kept is not None:
            return kept
        if isinstance(expr, ast.BinOp) and not isinstance(expr.op, ast.MatMult):
            return expr.left
        return None

    def _through_tensor_ops(self, expr: ast.AST) -> ast.AST | None:
        """``through_elementwise`` for tensor methods and operators; a function of a module
        (``torch.sigmoid(x)``) makes its value, it is no method of the module."""
        if isinstance(expr, ast.Call) and self.ctx.call_qualname(expr) is not None:
            return None
        return self.through_elementwise(expr)

    def permuted_input(self, op: ast.AST) -> ast.AST | None:
        """The tensor a permuting operation permutes."""
        if isinstance(op, ast.Attribute):
            return op.value
        if self.ctx.call_qualname(op) is not None:
            return op.args[0] if op.args else None
        return op.func.value

    def earlier_permutation(self, op: ast.AST) -> ast.AST | None:
        """The permuting operation whose layout the input of the permuting operation ``op`` keeps,
        when that input has exactly one origin and it is one: in
        ``(x.permute(0, 2, 1) + b.unsqueeze(1)).permute(0, 2, 1)`` the first ``permute``."""
        base = self.permuted_input(op)
        if base is None:
            return None
        origins = self.flow.origins(base, self.through_elementwise)
        if len(origins) == 1 and origins[0] is not None and self.permuting_op(origins[0]) is not None:
            return origins[0]
        return None

    def layout_shown(self, op: ast.AST) -> bool:
        """Whether the code shows the layout of the tensor that the permuting operation ``op`` (the
        first of a chain, see ``earlier_permutation``) permutes: every value it may hold, followed
        through elementwise ops to their first operand and through parameters to the arguments of
        this file's call sites, is made here by an operation (a layer, a factory, ``reshape``, a
        call whose results are unpacked) and none is itself a permutation. A parameter whose
        callers are unknown, a loop variable, or a caller passing ``x.permute(1, 0, 2)`` (which
        this permutation may undo) leaves the layout unknown."""
        first = self.earlier_permutation(op) or op
        base = self.permuted_input(first)
        if base is None:
            return False
        origins = self.flow.origins(base, self._through_tensor_ops, parameters=True, unpacked=_unpacked_call)
        return all(origin is not None and self.permuting_op(origin) is None for origin in origins)

    def permuted_origins(self, expr: ast.AST) -> list[ast.AST]:
        """The permuting operations that may have produced ``expr``'s value."""
        return [
            origin
            for origin in self.flow.origins(expr, self.through_layout_keeping)
            if origin is not None and self.permuting_op(origin) is not None
        ]

    # ----- memory formats ------------------------------------------------------------------------
    def declared_memory_order(self, op: ast.AST) -> tuple[int, ...] | None:
        """The memory order (dimensions, outermost first) of the tensor the permuting operation
        ``op`` permutes, when the code shows it: a branch condition around ``op`` that tests that very
        value (``if x.is_contiguous(memory_format=torch.channels_last): x = x.permute(0, 2, 3, 1)``),
        or a value made by ``x.contiguous(memory_format=...)`` / ``.to(memory_format=...)``."""
        base = self.permuted_input(op)
        if base is None:
            return None
        for test, value in conditions_at(self.ctx, op):
            for expr, truth in consequences(test, value):
                found = method_call(expr) if truth else None
                if found is None or found[0] != "is_contiguous":
                    continue
                receiver = found[1]
                if ast.unparse(receiver) == ast.unparse(base) and self.flow.same_values(receiver, base):
                    return self._memory_format_order(expr)
        origins = self.flow.origins(base, self.through_layout_keeping)
        if len(origins) == 1 and isinstance(origins[0], ast.Call):
            found = method_call(origins[0])
            if found is not None and found[0] in FORMATTING_METHODS:
                return self._memory_format_order(origins[0])
        return None

    def _memory_format_order(self, call: ast.Call) -> tuple[int, ...] | None:
        """The memory order that a call's ``memory_format=`` (or lone positional format) names."""
        formats = [kw.value for kw in call.keywords if kw.arg == "memory_format"]
        if not formats and len(call.args) == 1 and not call.keywords:
            formats = list(call.args)
        return MEMORY_FORMAT_ORDERS.get(self.ctx.qualname(formats[0])) if len(formats) == 1 else None

    # ----- ranks ------------------------------------------------------------------------------
    def rank_of_permuted(self, op: ast.AST) -> int | None:
        if isinstance(op, ast.Attribute):
            return 2 if op.attr == "T" else self.rank(op.value)
        qual = self.ctx.call_qualname(op)
        method = op.func.attr if isinstance(op.func, ast.Attribute) else None
        if qual in ("torch.t",) or (qual is None and method == "t"):
            return 2
        if qual == "torch.permute" and len(op.args) == 2 and isinstance(op.args[1], (ast.Tuple, ast.List)):
            return len(op.args[1].elts)
        if qual is None and method == "permute":
            if len(op.args) == 1 and isinstance(op.args[0], (ast.Tuple, ast.List)):
                return len(op.args[0].elts)
            if op.args and not any(isinstance(a, ast.Starred) for a in op.args) and len(op.args) > 1:
                return len(op.args)
            return None
        base = op.args[0] if qual is not None and op.args else op.func.value if method else None
        return self.rank(base) if base is not None else None

    def rank(self, expr: ast.AST, depth: int = 0) -> int | None:
        """The number of dimensions of ``expr``'s value, when every origin tells the same."""
        if depth > 4:
            return None
        ranks = set()
        for origin in self.flow.origins(expr):
            ranks.add(self._rank_of_origin(origin, depth) if origin is not None else None)
        if isinstance(expr, ast.Name) and (None in ranks or not ranks):
            unpacked = self._rank_from_shape_unpack(expr)
            if unpacked is None:
                unpacked = self._rank_of_unpacked_pieces(expr, depth)
            if unpacked is not None:
                return unpacked
        return ranks.pop() if len(ranks) == 1 else None

    def _rank_of_unpacked_pieces(self, name: ast.Name, depth: int) -> int | None:
        """``q, k, v = qkv.unbind(0)``: one dimension fewer than ``qkv``; ``a, b = x.chunk(2)``
        (or ``split``): the same rank as ``x``."""
        bindings = self.flow.reaching(name)
        if len(bindings) != 1 or bindings[0].kind != "unpack" or not isinstance(bindings[0].source, ast.Call):
            return None
        source = bindings[0].source
        qual = self.ctx.call_qualname(source)
        if qual is not None:
            method, whole = qual.rsplit(".", 1)[-1], source.args[0] if source.args else None
            if not qual.startswith("torch.") or whole is None:
                return None
        else:
            found = method_call(source)
            if found is None:
                return None
            method, whole = found
        change = PIECE_RANK_CHANGE.get(method)
        inner = self.rank(whole, depth + 1) if change is not None else None
        return None if inner is None else inner + change

    def _rank_of_origin(self, origin: ast.AST, depth: int) -> int | None:
        if isinstance(origin, ast.BinOp):
            # Broadcasting (elementwise ops, and `@` on batched matrices): the larger rank.
            ranks = [self.rank(side, depth + 1) for side in (origin.left, origin.right)]
            known = [r for r in ranks if r is not None]
            return max(known) if known and (len(known) == 2 or isinstance(origin.op, ast.MatMult)) else None
        if isinstance(origin, ast.Subscript):
            return self._rank_of_subscript(origin, depth)
        if not isinstance(origin, ast.Call):
            if isinstance(origin, ast.Attribute) and origin.attr in PERMUTING_ATTRIBUTES:
                return self.rank(origin.value, depth + 1)
            return None
        qual = self.ctx.call_qualname(origin)
        if qual in RANK_OF_FIRST_ARGUMENT and origin.args:
            return self.rank(origin.args[0], depth + 1)
        if qual in SHAPE_FACTORIES or qual == "torch.reshape":
            args = origin.args[1:] if qual == "torch.reshape" else origin.args
            if qual == "torch.full" and args:
                args = args[:1]
            shape = shape_args(ast.Call(func=origin.func, args=list(args), keywords=[]))
            return len(shape) if shape is not None else None
        found = method_call(origin)
        if found is None or qual is not None:
            return None
        method, receiver = found
        if method in SHAPE_METHODS:
            shape = shape_args(origin)
            return len(shape) if shape is not None else None
        if method == "permute":
            return self.rank_of_permuted(origin)
        if method in ("unsqueeze", "squeeze") and origin.args:
            inner = self.rank(receiver, depth + 1)
            return None if inner is None else inner + (1 if method == "unsqueeze" else -1)
        if method == "flatten":
            if not origin.args and not origin.keywords:
                return 1
            start = origin.args[0] if origin.args else None
            if len(origin.args) == 1 and isinstance(start, ast.Constant) and isinstance(start.value, int):
                return start.value + 1 if start.value >= 0 else None
            return None
        if method in RANK_KEEPING_METHODS:
            return self.rank(receiver, depth + 1)
        return None

    def _rank_of_subscript(self, node: ast.Subscript, depth: int) -> int | None:
        """``qkv[0]`` drops a dimension, ``x[:, :k]`` keeps them, ``x[None]`` adds one."""
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        change = 0
        for part in parts:
            if isinstance(part, ast.Slice) or (isinstance(part, ast.Constant) and part.value is Ellipsis):
                if isinstance(part, ast.Constant) and len(parts) > 1:
                    return None  # x[..., 0]: counts from the end; fine, but keep it simple
                continue
            if isinstance(part, ast.Constant) and part.value is None:
                change += 1
            elif isinstance(part, ast.Constant) and isinstance(part.value, int):
                change -= 1
            else:
                return None  # a tensor or variable index: cannot tell
        inner = self.rank(node.value, depth + 1)
        return None if inner is None else inner + change

    def _rank_from_shape_unpack(self, name: ast.Name) -> int | None:
        names = self.shape_unpack_names(name)
        return len(names) if names is not None else None

    def shape_unpack_names(self, name: ast.Name) -> list[str | None] | None:
        """``B, N, C = x.shape`` (or ``x.size()``) with the same value of ``x`` reaching ``name``:
        the names the sizes were unpacked into (None for a target that is no plain name)."""
        scope = self.flow.scope_of(name)
        table = self._shape_unpacks.get(scope)
        if table is None:
            table = self._shape_unpacks[scope] = self._collect_shape_unpacks(scope)
        here = {id(b.stmt) for b in self.flow.reaching(name)}
        for node, names in table.get(name.id, ()):
            there = {id(b.stmt) for b in self.flow.reaching(name.id, node)}
            if here and here == there:
                return names
        return None

    def _collect_shape_unpacks(self, scope: ast.AST) -> dict[str, list[tuple[ast.AST, list[str | None]]]]:
        table: dict[str, list[tuple[ast.AST, list[str | None]]]] = {}
        for binding_list in self.flow.flow(scope).bindings.values():
            for binding in binding_list:
                source = binding.source
                if binding.kind != "unpack" or binding.index != 0 or source is None:
                    continue
                target = binding.stmt.targets[0] if isinstance(binding.stmt, ast.Assign) else None
                if not isinstance(target, (ast.Tuple, ast.List)) or any(
                    isinstance(e, ast.Starred) for e in target.elts
                ):
                    continue
                holder = None
                if isinstance(source, ast.Attribute) and source.attr == "shape":
                    holder = source.value
                elif method_call(source) is not None and method_call(source)[0] == "size" and not source.args:
                    holder = source.func.value
                if isinstance(holder, ast.Name):
                    names = [e.id if isinstance(e, ast.Name) and e.id != "_" else None for e in target.elts]
                    table.setdefault(holder.id, []).append((source, names))
        return table
