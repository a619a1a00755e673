"""TL008 view-after-permute."""

from __future__ import annotations

import ast

from torchlint.engine.rule import Rule, register
from torchlint.torchmodel.layout import Layout, is_minus_one, is_product, shape_args


def _merges(shape: list[ast.AST], rank: int | None) -> bool:
    """Whether a view to ``shape`` evidently merges dimensions of a rank-``rank`` tensor."""
    if rank is not None:
        # Fewer dimensions than the permuted tensor: some of them are merged. More: a
        # split (always legal on any strides). Same count: a relabel we cannot judge.
        return len(shape) < rank
    if len(shape) == 1:
        return True  # flattening a tensor of at least two dimensions
    return len(shape) == 2 and any(is_minus_one(s) or is_product(s) for s in shape)


@register
class ViewAfterPermute(Rule):
    code = "TL008"
    name = "view-after-permute"
    severity = "error"
    summary = "`.view()` merges dimensions of a permuted (non-contiguous) tensor."
    what = """
        Reports a `.view(...)` whose input comes from `.permute`, `.transpose`, `.t()`,
        `.T`, `.mT`, `.mH`, `.swapaxes`, `.swapdims`, `.movedim` or `torch.transpose` /
        `torch.permute` — directly, through variables, through slicing, or through
        elementwise ops that keep the strides (`.eq()`, `.float()`, `.clone()`, `* 2`)
        — with no `.contiguous()` or `.reshape()` in between, when the new shape merges
        dimensions: fewer dimensions than the permuted tensor has (its rank is read
        from `permute(...)`, `B, N, C = x.shape`, earlier `view`/`reshape` calls), or,
        when the rank is unknown, a flatten to one dimension (`view(-1)`) or to two
        with `-1` or a product such as `h * w`. Views that only split a dimension (`(B, N, C)`
        transposed, then viewed as `(B, C, H, W)`) are legal and not reported.
    """
    why = """
        A permuted tensor shares its storage with the original, so its elements are
        no longer laid out in order. `.view()` never copies: when the new shape merges
        dimensions that are not adjacent in memory, PyTorch raises "view size is not
        compatible with input tensor's size and stride". The classic case is the top-k
        accuracy helper (`pred = pred.t()`, `correct = pred.eq(...)`,
        `correct[:k].view(-1)`), which broke for many users when comparison results
        started keeping the strides of their input. The crash often hides in a code
        path that runs rarely (evaluation, a non-default config).
    """
    example = """
        pred = output.topk(maxk, 1, True, True)[1].t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        correct_k = correct[:k].view(-1).float().sum(0)
    """
    instead = """
        pred = output.topk(maxk, 1, True, True)[1].t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        correct_k = correct[:k].reshape(-1).float().sum(0)
    """
    VALID = [
        """
import torch
def to_map(x, H, W):
    B, N, C = x.shape
    return x.transpose(1, 2).view(B, C, H, W)
""",
        """
import torch
def heads(x, B, T, C):
    y = x.transpose(1, 2).contiguous().view(B, T, C)
    z = x.permute(0, 2, 1, 3).reshape(B, T, -1)
    return y, z
""",
    ]
    INVALID = [
        """
import torch
def accuracy(output, target, topk=(1,)):
    maxk = max(topk)
    _, pred = output.topk(maxk, 1, True, True)
    pred = pred.t()
    correct = pred.eq(target.view(1, -1).expand_as(pred))
    res = []
    for k in topk:
        correct_k = correct[:k].view(-1).float().sum(0)  # expect: TL008
        res.append(correct_k)
    return res
""",
        """
import torch
def flatten_tokens(feat):
    n, c, h, w = feat.shape
    return feat.permute(0, 2, 3, 1).view(n, h * w, c)  # expect: TL008
""",
    ]

    def check(self, ctx):
        if ".view" not in ctx.source:
            return
        layout = None
        for call in ctx.calls:
            func = call.func
            if not (isinstance(func, ast.Attribute) and func.attr == "view"):
                continue
            shape = shape_args(call)
            if shape is None:
                continue
            layout = layout or Layout(ctx)
            for permuted in layout.permuted_origins(func.value):
                if _merges(shape, layout.rank_of_permuted(permuted)):
                    yield self.report(call, self._message(ctx, call, permuted))
                    break

    @staticmethod
    def _message(ctx, call, permuted) -> str:
        op = ctx.segment(permuted) or "permute"
        if len(op) > 40:
            op = op[:37] + "..."
        where = "" if permuted.lineno == call.lineno else f" (line {permuted.lineno})"
        view = ctx.segment(call) or ".view(...)"
        receiver = ctx.segment(call.func.value)
        if permuted.lineno == call.lineno and receiver and view.startswith(receiver):
            view = view[len(receiver) :]  # chained: `.view(n, h * w, c)`, the permute is named next
        if len(view) > 50 or "\n" in view:
            view = ".view(...)"
        return (
            f"`{view}` merges dimensions of the non-contiguous result of `{op}`{where}: this raises "
            '"view size is not compatible with input tensor\'s size and stride"; use `.reshape(...)` '
            "instead, or call `.contiguous()` before `.view(...)`"
        )
