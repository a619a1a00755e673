"""Whether ``.view(...)`` on a permuted tensor merges dimensions that are out of order in memory.

The permuted tensor must be shown to be laid out in order (``Layout.layout_shown``): made in this
file by an operation, not a parameter of unknown callers or a loop variable, whose layout may already
be permuted (and undone by this permutation). A permutation of a contiguous tensor keeps each dimension's stride: dimension ``j`` of the
permuted tensor P is dimension ``perm[j]`` of the original. ``.view`` never copies, so each group
of P's dimensions that it merges into one must be laid out one after another in memory: for two
consecutive dimensions ``a``, ``b`` of a group, ``perm[b]`` must come after ``perm[a]`` with only
size-1 dimensions of the original between them. ``x.permute(0, 2, 3, 1).view(b, h * w, c)``
merges P's dimensions 1 and 2 (original 2 and 3): legal. ``pred.t()[:k].view(-1)`` merges
dimensions 0 and 1 (original 1 and 0): it raises whenever both have more than one element.

Which of P's dimensions a view merges is worked out from the sizes it is given: sizes written
as the names a shape was unpacked into (``c, t, h, w = frames.shape``), the sizes of an earlier
``view``/``reshape``/factory call, ``x.size(i)``/``x.shape[i]``, products of those, ``-1`` and
literal ones. Every split of P's dimensions into the view's sizes that agrees with what is known
is tried; the verdict is "raises" only when every one of them merges dimensions out of order
(under each rank P may have, when its rank is unknown). Anything else -- some grouping legal, or
nothing that fits -- is no verdict: the rule stays silent rather than guess.

Size-1 dimensions never break a merge. They are known from literal ``1`` sizes, from a
condition around the view (``if x.shape[1:4] == torch.Size([1, 1, 1]):``, ``x.size(2) == 1``),
and from the reduction that made the permuted tensor (``_reduced_sizes``): ``argmax(dim,
keepdim=True)`` keeps ``dim`` with size 1, ``topk(k, dim)`` (either element of its result) leaves
``dim`` with size ``k``, which counts when every value ``k`` may hold is 1
(``analysis.constants.values_from_callers``: ``maxk = max(topk)`` with every call of the helper in
the project leaving ``topk=(1,)`` at its default).
What this cannot tell: sizes that are equal at run time but written differently (``c`` and
``g * (c // g)`` are different names to it), dimensions of size 1 that nothing declares, and
inputs that were already non-contiguous before the permutation; in all three it stays silent or
judges as if the input were contiguous. One such input is told: a permutation whose input keeps the
layout of an earlier one (``(x.permute(0, 2, 1) + b.unsqueeze(1)).permute(0, 2, 1)``, the sum laid
out like its strided first operand) is judged as the two composed, so a permute that undoes the
first gives a contiguous tensor and any view of it is legal. So is an input whose memory format
the code declares (``Layout.declared_memory_order``): a channels-last tensor permuted to NHWC lists
its dimensions in memory order. Sizes of the permuted input are followed through the data flow
(``_known_sizes``): a shape unpack, the call that built it, a permutation of such a tensor, and
spatial resampling, which keeps the batch and channel sizes.
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from torchlint.analysis.conditions import conditions_at, consequences
from torchlint.analysis.constants import values_from_callers
from torchlint.analysis.nodes import method_call
from torchlint.torchmodel.layout import (
    KEEPDIM_REDUCTIONS,
    PAIR_RESULTS,
    RESAMPLING_FUNCTIONS,
    SHAPE_FACTORIES,
    SHAPE_METHODS,
    TOP_K,
    is_minus_one,
    shape_args,
)

if TYPE_CHECKING:
    from torchlint.torchmodel.layout import Layout

# How many ranks to try when the permuted tensor's rank is unknown (from the least it can have).
_RANKS_TRIED = 3
_MAX_GROUPINGS = 4096
_WILD, _ONE, _FREE = "-1", "1", "?"


@dataclass(frozen=True)
class OutOfOrderMerge:
    """A view that merges dimensions ``dims`` of the permuted tensor, not adjacent in memory."""

    dims: tuple[int, int]


def out_of_order_merge(layout: Layout, view: ast.Call, shape: list[ast.AST], op: ast.AST) -> OutOfOrderMerge | None:
    """The merge that makes ``view`` (with sizes ``shape``) raise on the result of the permuting
    operation ``op``, when every reading of the view raises; None when it may be legal."""
    earlier = layout.earlier_permutation(op)
    declared = layout.declared_memory_order(op) if earlier is None else None
    if declared is None and not layout.layout_shown(op):
        return None  # the permuted tensor may already be laid out otherwise (a caller's permute undone here)
    ranks = _candidate_ranks(layout, earlier if earlier is not None else op)
    if not ranks:
        return None
    found = None
    for rank in ranks:
        perm = _permutation(layout, op, rank)
        first = _permutation(layout, earlier, rank) if earlier is not None else None
        if perm is None or (earlier is not None and first is None):
            return None
        memory = None
        if first is not None:
            # The permuted tensor already had the layout of ``earlier``: dimension j of the result is
            # dimension first[perm[j]] in memory order. A permute that undoes it restores contiguity.
            perm = [first[p] for p in perm]
        elif declared is not None:
            # The input's own memory format (channels last) puts its dimension d at position
            # declared.index(d) in memory: permuting into that order gives a contiguous tensor.
            if len(declared) != rank:
                return None
            memory = [declared.index(p) for p in perm]
        merge = _Geometry(layout, view, shape, earlier if earlier is not None else op, perm, memory).verdict()
        if merge is None:
            return None
        found = found or merge
    return found


def _int(expr: ast.AST) -> int | None:
    if isinstance(expr, ast.Constant) and type(expr.value) is int:
        return expr.value
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub) and isinstance(expr.operand, ast.Constant):
        value = expr.operand.value
        return -value if type(value) is int else None
    return None


def _op_name_and_args(layout: Layout, op: ast.AST) -> tuple[str, list[ast.AST]]:
    if isinstance(op, ast.Attribute):
        return op.attr, []
    qual = layout.ctx.call_qualname(op)
    if qual is not None:
        return qual.rsplit(".", 1)[-1], list(op.args[1:])
    return op.func.attr, list(op.args)


def _dims_argument(args: list[ast.AST]) -> list[ast.AST]:
    """``permute(0, 2, 1)`` and ``permute((0, 2, 1))`` alike."""
    if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
        return list(args[0].elts)
    return args


def _candidate_ranks(layout: Layout, op: ast.AST) -> list[int]:
    """The ranks the permuted tensor may have: the known one, else a few from the least possible."""
    name, args = _op_name_and_args(layout, op)
    if name == "permute":
        dims = _dims_argument(args)
        return [len(dims)] if dims and all(_int(d) is not None for d in dims) else []
    if name in ("t", "H"):
        return [2]  # `.t()` and `.H` take at most two dimensions (a vector is never transposed on purpose)
    known = layout.rank_of_permuted(op)
    if known is not None:
        return [known]
    if name == "T":
        return [2]  # `.T` on more than two dimensions is deprecated
    if name in ("mT", "mH"):
        least = 2
    else:
        indices = [_int(a) for a in itertools.chain.from_iterable(_dims_argument([a]) for a in args[:2])]
        if len(args) < 2 or any(i is None for i in indices):
            return []
        least = max(i + 1 if i >= 0 else -i for i in indices)
    return list(range(max(least, 2), max(least, 2) + _RANKS_TRIED))


def _permutation(layout: Layout, op: ast.AST, rank: int) -> list[int] | None:
    """``perm`` with dimension ``j`` of the result being dimension ``perm[j]`` of the input."""
    name, args = _op_name_and_args(layout, op)
    identity = list(range(rank))
    if name in ("t", "H", "T"):
        return identity[::-1]
    if name in ("mT", "mH"):
        return identity[:-2] + identity[-2:][::-1]
    ints = [_int(d) for d in _dims_argument(args)] if name == "permute" else None
    if name == "permute":
        if any(i is None for i in ints) or sorted(i % rank for i in ints) != identity:
            return None
        return [i % rank for i in ints]
    if name in ("transpose", "swapaxes", "swapdims") and len(args) == 2:
        a, b = _int(args[0]), _int(args[1])
        if a is None or b is None or not (-rank <= a < rank and -rank <= b < rank):
            return None
        perm = list(identity)
        perm[a % rank], perm[b % rank] = perm[b % rank], perm[a % rank]
        return perm
    if name in ("movedim", "moveaxis") and len(args) == 2:
        sources = [_int(d) for d in _dims_argument([args[0]])]
        targets = [_int(d) for d in _dims_argument([args[1]])]
        if None in sources or None in targets or len(sources) != len(targets):
            return None
        sources, targets = [s % rank for s in sources], [t % rank for t in targets]
        perm: list[int | None] = [None] * rank
        for source, target in zip(sources, targets):
            perm[target] = source
        rest = iter(d for d in identity if d not in sources)
        return [d if d is not None else next(rest) for d in perm]
    return None


class _Geometry:
    """One reading of a view: the permuted tensor's rank, permutation and what is known of its sizes.

    ``perm[j]`` is the dimension of the permuted input that dimension ``j`` is; ``memory[j]`` its
    position in memory (the same unless the input has a declared memory format)."""

    def __init__(
        self,
        layout: Layout,
        view: ast.Call,
        shape: list[ast.AST],
        op: ast.AST,
        perm: list[int],
        memory: list[int] | None = None,
    ):
        self.layout, self.view, self.shape, self.op, self.perm = layout, view, shape, op, perm
        self.memory = memory if memory is not None else perm
        self.rank = len(perm)
        self.receiver = ast.unparse(view.func.value)
        self.base = layout.permuted_input(op)
        self.base_text = ast.unparse(self.base) if self.base is not None else None
        self.sizes = self._sizes()  # per dimension of the permuted tensor: the texts that name its size
        self.ones = self._size_one_dims()

    # ----- what is known of the permuted tensor's sizes ----------------------------------------
    def _sizes(self) -> list[set[str]]:
        sizes = [{f"@{j}"} for j in range(self.rank)]
        for j, names in enumerate(self._receiver_sizes() or ()):
            sizes[j] |= names
        base = self._base_sizes()
        if base is not None:
            for j in range(self.rank):
                sizes[j] |= base[self.perm[j]]
        return sizes

    def _receiver_sizes(self) -> list[set[str]] | None:
        """``c, t, h, w = frames.shape`` where ``frames`` holds the viewed (permuted) value."""
        return _unpacked_sizes(self.layout, self.view.func.value, self.rank)

    def _base_sizes(self) -> list[set[str]] | None:
        """Sizes of the tensor that was permuted."""
        return _known_sizes(self.layout, self.base, self.rank) if self.base is not None else None

    def _size_one_dims(self) -> set[int]:
        """Dimensions of the permuted tensor known to have size 1 (literal sizes, conditions)."""
        ones = {j for j, names in enumerate(self.sizes) if "1" in names}
        for condition, holds in conditions_at(self.layout.ctx, self.view):
            for test, value in consequences(condition, holds):
                if value and isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
                    ones |= self._ones_declared(test.left, test.comparators[0])
                    ones |= self._ones_declared(test.comparators[0], test.left)
        return ones

    def _ones_declared(self, sizes: ast.AST, ones: ast.AST) -> set[int]:
        """``x.shape[1:4] == torch.Size([1, 1, 1])``, ``x.size(2) == 1``: the dimensions named."""
        picked = self._dims_named(sizes)
        if picked is None:
            return set()
        values = ones.args[0] if isinstance(ones, ast.Call) and len(ones.args) == 1 else ones
        items = values.elts if isinstance(values, (ast.Tuple, ast.List)) else [values]
        if len(items) != len(picked) or any(_int(i) != 1 for i in items):
            return set()
        return set(picked)

    def _dims_named(self, expr: ast.AST) -> list[int] | None:
        """The permuted tensor's dimensions that ``x.shape[i]``, ``x.shape[a:b]``, ``x.size(i)`` read."""
        holder, index = _size_access(expr)
        if holder is None:
            return None
        to_view = self._dimension_map(holder)
        if to_view is None:
            return None
        if isinstance(index, ast.Slice):
            if index.step is not None:
                return None
            bounds = [_int(b) if b is not None else d for b, d in ((index.lower, 0), (index.upper, self.rank))]
            if None in bounds:
                return None
            return [to_view(d) for d in range(self.rank)[bounds[0] : bounds[1]]]
        position = _int(index)
        if position is None or not -self.rank <= position < self.rank:
            return None
        return [to_view(position % self.rank)]

    def _dimension_map(self, holder: ast.AST):
        """Dimension of ``holder`` -> dimension of the permuted tensor, for the viewed tensor or the
        tensor that was permuted; None for any other tensor."""
        text = ast.unparse(holder)
        if text == self.receiver:
            return lambda d: d
        if text == self.base_text:
            return self.perm.index
        return None

    # ----- the view's sizes ------------------------------------------------------------------------
    def _factor(self, expr: ast.AST) -> str:
        dims = self._dims_named(expr)
        if dims is not None and len(dims) == 1 and not isinstance(_size_access(expr)[1], ast.Slice):
            return f"@{dims[0]}"
        return _text(expr)

    def _size_kind(self, size: ast.AST) -> str | list[str]:
        """``-1``, ``1``, an unknown size (``?``), or the names of the factors of a product."""
        if is_minus_one(size):
            return _WILD
        value = _int(size)
        if value is not None:
            return _ONE if value == 1 else _FREE
        factors = [self._factor(f) for f in _factors(size)]
        known = set().union(*self.sizes)
        if any(_int(f) is not None for f in _factors(size)) or not all(f in known for f in factors):
            return _FREE  # a size that is not a product of the permuted tensor's known sizes
        return factors

    # ----- groupings and the verdict ------------------------------------------------------------------
    def verdict(self) -> OutOfOrderMerge | None:
        kinds = [self._size_kind(s) for s in self.shape]
        readings = self._judge(kinds)
        if readings == "none" and any(isinstance(k, list) for k in kinds):
            # The sizes fit no pure merge: the view also splits a dimension. Judge by the count of
            # sizes alone: a view into k sizes keeps at most k - 1 of the tensor's boundaries, so
            # when every split into k runs merges across an out-of-order boundary, so does this one.
            readings = self._judge([_FREE if isinstance(k, list) else k for k in kinds])
        return readings if isinstance(readings, OutOfOrderMerge) else None

    def _judge(self, kinds) -> OutOfOrderMerge | str:
        """The merge every reading makes out of order; "legal" when some reading is legal (or there
        are too many to try), "none" when no reading fits the sizes."""
        first = None
        for count, groups in enumerate(self._groupings(kinds, 0, 0)):
            merge = self._out_of_order(groups)
            if merge is None or count >= _MAX_GROUPINGS:
                return "legal"
            first = first or merge
        return first or "none"

    def _groupings(self, kinds, index, start):
        """Every way to give each view size a run of the permuted tensor's dimensions, in order."""
        if index == len(kinds):
            if start == self.rank:
                yield []
            return
        for length in self._run_lengths(kinds[index], start):
            for rest in self._groupings(kinds, index + 1, start + length):
                yield [range(start, start + length), *rest]

    def _run_lengths(self, kind, start) -> list[int]:
        left = self.rank - start
        if kind == _ONE:  # a new dimension, or one known (or not known not) to be 1
            return [0, 1] if left and self.sizes[start] - {f"@{start}"} <= {"1"} else [0]
        if kind in (_WILD, _FREE):
            return list(range(1, left + 1))
        length = len(kind)
        if length > left or not _matches(kind, [self.sizes[j] for j in range(start, start + length)]):
            return []
        return [length]

    def _out_of_order(self, groups) -> OutOfOrderMerge | None:
        original_ones = {self.memory[j] for j in self.ones}
        for group in groups:
            dims = [j for j in group if j not in self.ones]
            for a, b in zip(dims, dims[1:]):
                low, high = self.memory[a], self.memory[b]
                if high < low or any(d not in original_ones for d in range(low + 1, high)):
                    return OutOfOrderMerge((a, b))
        return None


def _matches(factors: list[str], sizes: list[set[str]]) -> bool:
    """Whether the factors can be paired one to one with dimensions whose sizes they name
    (a dimension whose size is unknown pairs with any factor not pinned to a dimension)."""
    for order in itertools.permutations(factors):
        if all(
            factor in names or (len(names) == 1 and not factor.startswith("@")) for factor, names in zip(order, sizes)
        ):
            return True
    return False


def _factors(expr: ast.AST) -> list[ast.AST]:
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
        return _factors(expr.left) + _factors(expr.right)
    return [expr]


def _text(expr: ast.AST) -> str:
    return ast.unparse(expr)


def _size_access(expr: ast.AST) -> tuple[ast.AST | None, ast.AST | None]:
    """``x.shape[i]`` / ``x.size()[i]`` -> (x, i); ``x.size(i)`` -> (x, i); else (None, None)."""
    if isinstance(expr, ast.Subscript):
        inner = expr.value
        if isinstance(inner, ast.Attribute) and inner.attr == "shape":
            return inner.value, expr.slice
        found = method_call(inner)
        if found is not None and found[0] == "size" and not inner.args:
            return found[1], expr.slice
        return None, None
    found = method_call(expr)
    if found is not None and found[0] == "size" and len(expr.args) == 1 and not expr.keywords:
        return found[1], expr.args[0]
    return None, None


def _unpacked_sizes(layout: Layout, expr: ast.AST, rank: int) -> list[set[str]] | None:
    """``c, t, h, w = frames.shape`` with the value of ``frames`` that ``expr`` reads: the names."""
    if isinstance(expr, ast.Name):
        names = layout.shape_unpack_names(expr)
        if names is not None and len(names) == rank:
            return [{n} for n in names]
    return None


def _known_sizes(layout: Layout, expr: ast.AST, rank: int, depth: int = 0) -> list[set[str]] | None:
    """The names of the sizes of ``expr``'s ``rank`` dimensions, as far as data flow shows them: from a
    shape unpack (``b, c, h, w = x.shape``), the call that built it (``x.reshape(1, n, m, dim)``),
    through a permutation of such a tensor, and through spatial resampling (``interpolate``), which
    keeps the batch and channel sizes. None when nothing is known."""
    if depth > 4:
        return None
    unpacked = _unpacked_sizes(layout, expr, rank)
    if unpacked is not None:
        return unpacked
    origins = layout.flow.origins(expr, unpacked=_pair_element)
    origin = _pair_whole(origins[0]) if len(origins) == 1 else None
    if not isinstance(origin, ast.Call):
        return None
    built = _shape_written(layout, origin)
    if built is not None:
        return [set() if is_minus_one(s) else {_text(s)} for s in built] if len(built) == rank else None
    if layout.permuting_op(origin) is not None:
        perm, inner = _permutation(layout, origin, rank), layout.permuted_input(origin)
        sizes = _known_sizes(layout, inner, rank, depth + 1) if perm is not None and inner is not None else None
        return [sizes[p] for p in perm] if sizes is not None else None
    if layout.ctx.call_qualname(origin) in RESAMPLING_FUNCTIONS and origin.args and rank >= 3:
        sizes = _known_sizes(layout, origin.args[0], rank, depth + 1)
        return sizes[:2] + [set() for _ in range(rank - 2)] if sizes is not None else None
    return _reduced_sizes(layout, origin, rank)


def _reduction(layout: Layout, call: ast.Call) -> tuple[str, list[ast.AST], dict[str, ast.AST]] | None:
    """``x.topk(k, 1)`` / ``torch.topk(x, k, 1)``: the method, its arguments after the tensor, keywords."""
    qual = layout.ctx.call_qualname(call)
    keywords = {k.arg: k.value for k in call.keywords if k.arg is not None}
    if qual is None:
        found = method_call(call)
        return (found[0], list(call.args), keywords) if found is not None else None
    if qual.startswith("torch.") and qual.count(".") == 1 and call.args:
        return qual[len("torch.") :], list(call.args[1:]), keywords
    return None


def _pair_element(call: ast.AST, index: int) -> ast.AST | None:
    """``_, pred = out.topk(k, 1)``: either element has the sizes of the reduction's result."""
    if isinstance(call, ast.Call) and index in (0, 1):
        found = method_call(call)
        if found is not None and found[0] in PAIR_RESULTS:
            return call
    return None


def _pair_whole(node: ast.AST | None) -> ast.AST | None:
    """``out.topk(k, 1)[1]``, ``out.max(1, keepdim=True).indices``: the reduction itself."""
    element = isinstance(node, ast.Subscript) and _int(node.slice) in (0, 1)
    if not element and not (isinstance(node, ast.Attribute) and node.attr in ("values", "indices")):
        return node
    inner = node.value
    found = method_call(inner) if isinstance(inner, ast.Call) else None
    return inner if found is not None and found[0] in PAIR_RESULTS else node


def _reduced_sizes(layout: Layout, call: ast.Call, rank: int) -> list[set[str]] | None:
    """A reduction that leaves one dimension of size 1: ``topk(k, dim)`` when every value ``k`` may
    hold is 1 (followed into the callers: ``maxk = max(topk)`` with every call passing ``topk=(1,)``),
    ``argmax(dim, keepdim=True)`` and the like. None when no dimension is known to be 1."""
    found = _reduction(layout, call)
    if found is None:
        return None
    method, args, keywords = found
    if method == TOP_K:
        k = args[0] if args else keywords.get("k")
        dim = args[1] if len(args) > 1 else keywords.get("dim")
        one = k is not None and _always_one(layout, k)
    elif method in KEEPDIM_REDUCTIONS:
        dim = args[0] if args else keywords.get("dim")
        keep = args[1] if len(args) > 1 else keywords.get("keepdim")
        one = dim is not None and isinstance(keep, ast.Constant) and keep.value is True
    else:
        return None
    position = -1 if dim is None else _int(dim)
    if not one or position is None or not -rank <= position < rank:
        return None
    sizes: list[set[str]] = [set() for _ in range(rank)]
    sizes[position % rank] = {_ONE}
    return sizes


def _always_one(layout: Layout, size: ast.AST) -> bool:
    values = values_from_callers(layout.ctx, size)
    return bool(values) and all(type(v) is int and v == 1 for v in values)


def _shape_written(layout: Layout, call: ast.Call) -> list[ast.AST] | None:
    """The sizes a ``view``/``reshape``/factory call writes out (``torch.zeros(b, c, h, w)``)."""
    qual = layout.ctx.call_qualname(call)
    if qual in SHAPE_FACTORIES:
        args = call.args[:1] if qual == "torch.full" else call.args
        return shape_args(ast.Call(func=call.func, args=list(args), keywords=[]))
    if qual == "torch.reshape" and len(call.args) == 2:
        return shape_args(ast.Call(func=call.func, args=call.args[1:], keywords=[]))
    found = method_call(call)
    if qual is None and found is not None and found[0] in SHAPE_METHODS - {"expand"}:
        return shape_args(call)
    return None
