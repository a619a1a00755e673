"""TL008 view-after-permute."""

from __future__ import annotations

import ast

from torchlint.analysis.conditions import conditions_at, implies
from torchlint.analysis.expected_failures import caught_in_function
from torchlint.engine.rule import Message, Rule, register
from torchlint.torchmodel.layout import Layout, shape_args
from torchlint.torchmodel.views import out_of_order_merge


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
        — with no `.contiguous()` or `.reshape()` in between, when the view merges two
        dimensions that the permutation left out of order in memory. Which dimensions
        are merged is worked out from the permutation and the view's sizes: names a
        shape was unpacked into (`b, c, h, w = x.shape`), sizes of the `view`/`reshape`
        that built the tensor, `x.size(i)`, products such as `h * w`, `-1`. Merging
        dimensions that stay adjacent (`x.permute(0, 2, 3, 1).view(b, h * w, c)`) and
        splitting one (`x.transpose(1, 2).view(B, C, H, W)`) are legal and not
        reported, and so is any view after a permutation that undoes an earlier one
        through an elementwise op, whose result keeps the layout of its first operand
        (`(p.permute(0, 2, 1) + s.unsqueeze(1)).permute(0, 2, 1)` is contiguous), and
        a permutation of a tensor whose memory format the code declares — a branch
        `if x.is_contiguous(memory_format=torch.channels_last):` around it, or
        `x.contiguous(memory_format=...)` — is judged against that layout
        (`permute(0, 2, 3, 1)` of a channels-last tensor is contiguous). Sizes are
        followed through permutations and spatial resampling (`F.interpolate` keeps the
        batch and channel sizes); dimensions of size 1 never break a view and do not
        count: those a condition declares (`if x.shape[1:4] == torch.Size([1, 1, 1]):`),
        the kept dimension of `argmax(dim, keepdim=True)` (and `max`, `min`... with
        `keepdim=True`), and the dimension `topk(k, dim)` leaves of size `k` when `k` is
        always 1: a literal, or a value followed through assignments and `max(...)` into
        the callers (`maxk = max(topk)` in an `accuracy(output, target, topk=(1,))`
        helper that every call in the project leaves at its default or passes `(1,)`;
        one call passing `topk=(1, 5)`, or a helper no file of the project calls, whose
        callers are unknown, keeps the finding). Views in a
        branch that runs only on XLA devices (`if device.type == "xla":`), whose
        tensors always report contiguous strides, are not reported, nor are views whose
        error is caught where they run: in the `try` body of the same function, with a
        handler for `RuntimeError` or a base of it (`except RuntimeError as e:
        print(e)`, `except Exception:`, a bare `except:`) that does not raise again: a
        demonstration of the error or a fallback (`except RuntimeError: y = x.reshape(-1)`),
        not a crash. When the rule
        cannot tell which dimensions are merged — some reading of the sizes is legal,
        the tensor's rank is unknown and some rank makes the view legal (a
        `transpose(0, 1)` of an argument viewed as `(x.size(0), -1)`), sizes that are
        equal but written differently — it stays silent. It also stays silent when the
        layout of the tensor being permuted is not shown: every value it may hold
        (followed through elementwise ops and comparisons such as `(p >= 0.5)`, and from
        a parameter to the arguments of this file's call sites) must be made by an
        operation here — a layer, a factory, `view`/`reshape`, a call whose results are
        unpacked (`_, pred = out.topk(k, 1)`). A parameter whose callers are elsewhere
        (a block's `forward(x)` fed `x.permute(1, 0, 2)` by its encoder, which this
        permutation undoes), a loop variable, or a caller passing a permuted value
        leaves it unknown. Known limitation: a size-1 dimension that only the callers'
        tensors show (a helper always given an `(N, 1)` column, whose `.t().view(-1)` is
        legal) is not seen; such a view of a tensor made in the file is still reported.
    """
    why = """
        A permuted tensor shares its storage with the original, so its elements are
        no longer laid out in order. `.view()` never copies: when the new shape merges
        dimensions that are not adjacent in memory, PyTorch raises "view size is not
        compatible with input tensor's size and stride". The classic case is the top-k
        accuracy helper (`pred = pred.t()`, `correct = pred.eq(...)`,
        `correct[:k].view(-1)`), which broke for many users when comparison results
        started keeping the strides of their input. The crash often hides: a merged
        dimension of size 1 never breaks a view (top-1 works, top-5 raises), and the
        code path may run rarely (evaluation, a non-default config).
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
def to_tokens(feat):
    n, c, h, w = feat.shape
    return feat.permute(0, 2, 3, 1).view(n, h * w, c)
""",
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
def rows_of(conv, x):
    feat = conv(x)
    n, c, h, w = feat.shape
    return feat.permute(0, 2, 3, 1).view(n, h, w * c)  # expect: TL008
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
                merge = out_of_order_merge(layout, call, shape, permuted)
                if merge is not None and not _on_xla(ctx, call) and not caught_in_function(ctx, call, "RuntimeError"):
                    yield self.report(call, self._message(ctx, call, permuted, merge))
                    break

    @staticmethod
    def _message(ctx, call, permuted, merge) -> Message:
        op = ctx.quote(permuted, limit=40) or "permute"
        where = "" if permuted.lineno == call.lineno else f" (line {permuted.lineno})"
        view = ctx.segment(call) or ".view(...)"
        receiver = ctx.segment(call.func.value)
        if permuted.lineno == call.lineno and receiver and view.startswith(receiver):
            view = view[len(receiver) :]  # chained: `.view(n, h * w, c)`, the permute is named next
        if len(view) > 50 or "\n" in view:
            view = ".view(...)"
        a, b = merge.dims
        return Message(
            f"`{view}` merges dimensions {a} and {b} of `{op}`{where}, which the permutation left out of order in memory",
            why='this raises "view size is not compatible with input tensor\'s size and stride" whenever both '
            "have more than one element",
            help="use `.reshape(...)` instead, or call `.contiguous()` before `.view(...)`",
        )


def _mentions_xla(expr: ast.AST) -> bool | None:
    """A test that holds on XLA devices (``device.type == "xla"``, ``is_xla``, ``xm.is_xla_tensor(x)``);
    False for one that fails there (``device.type != "xla"``)."""
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1:
        sides = [expr.left, *expr.comparators]
        if any(isinstance(s, ast.Constant) and isinstance(s.value, str) and s.value.lower() == "xla" for s in sides):
            return isinstance(expr.ops[0], (ast.Eq, ast.Is, ast.In))
        return None
    names = [n.id for n in ast.walk(expr) if isinstance(n, ast.Name)]
    names += [n.attr for n in ast.walk(expr) if isinstance(n, ast.Attribute)]
    return True if any("xla" in name.lower().split("_") for name in names) else None


def _on_xla(ctx, call: ast.Call) -> bool:
    """XLA tensors report contiguous strides whatever their layout: a view there never raises."""
    return any(implies(test, value, _mentions_xla) for test, value in conditions_at(ctx, call))
