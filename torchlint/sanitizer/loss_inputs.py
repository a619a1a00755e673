"""What a loss function is given: TS116 loss-shape-broadcast, TS117 loss-target-float64.

TS116: element-wise losses (``mse_loss``, ``l1_loss``, ``poisson_nll_loss``...)
broadcast their input against their target.  A prediction of shape ``(N, 1)``
against a target of shape ``(N,)`` becomes an ``N x N`` matrix: every
prediction is compared with every target, the loss is finite and decreases,
and the model learns the mean of the targets.  Torch warns for some of these
losses and says nothing for others; the finding names the user's line and both
shapes.  A broadcast is reported only when it makes something bigger than both
operands (a target of shape ``(1, C)`` against ``(N, C)`` is a deliberate
constant target).

TS117: a float64 target given to a loss whose input is float32 (or half
precision): type promotion makes the loss and its backward run in float64
(slow on accelerators, and ``huber_loss``/``binary_cross_entropy`` then fail in
backward with "Found dtype Double but expected Float").  The usual source is a
target built from a NumPy array or a list of Python floats.

Both look at the two tensors' shapes and dtypes only: no host sync.
"""

from __future__ import annotations

import math

import torch

from .check import TrainingStepCheck
from .dtypes import INDEX_TARGET_LOSSES
from .findings import CHECK_NAMES
from .hooks import LOSS_FUNCTIONS
from .tensors import shape_of

#: Losses that compare input and target element by element (and broadcast): the
#: intercepted ones, less those whose target holds class indices.
ELEMENTWISE_LOSSES = frozenset(LOSS_FUNCTIONS).difference(
    (*INDEX_TARGET_LOSSES, "multi_margin_loss", "multilabel_margin_loss")
)
_LOW_PRECISION = (torch.float32, torch.float16, torch.bfloat16)


def _numel(shape) -> int:
    return math.prod(shape)


def _fix_for(input_shape, target_shape) -> str:
    """The reshape that makes the two shapes equal, when one is the other plus a 1."""
    if len(input_shape) == len(target_shape) + 1 and input_shape[-1] == 1 and input_shape[:-1] == target_shape:
        return f"squeeze the prediction (`input.squeeze({len(input_shape) - 1})`) or unsqueeze the target"
    if len(target_shape) == len(input_shape) + 1 and target_shape[-1] == 1 and target_shape[:-1] == input_shape:
        return f"squeeze the target (`target.squeeze({len(target_shape) - 1})`) or unsqueeze the prediction"
    return "reshape one of them so that the shapes are equal"


class LossInputCheck(TrainingStepCheck):
    codes = {code: CHECK_NAMES[code] for code in ("TS116", "TS117")}

    def on_loss_pre(self, fn_name, input, target) -> None:
        if not (isinstance(input, torch.Tensor) and isinstance(target, torch.Tensor)):
            return
        if fn_name in ELEMENTWISE_LOSSES and input.shape != target.shape:
            self._check_broadcast(fn_name, input, target)
        if target.dtype == torch.float64 and input.dtype in _LOW_PRECISION:
            self._report_float64(fn_name, input, target)

    def _check_broadcast(self, fn_name: str, input: torch.Tensor, target: torch.Tensor) -> None:
        try:
            shape = torch.broadcast_shapes(input.shape, target.shape)
        except RuntimeError:
            return  # torch raises its own error for shapes that do not broadcast
        size = _numel(shape)
        if size <= max(input.numel(), target.numel()):
            return
        self.emit(
            "TS116",
            f"{fn_name} got a prediction of shape {shape_of(input)} and a target of shape {shape_of(target)}: "
            f"they broadcast to {shape_of(shape)}, so every prediction is compared "
            f"with every target ({size} terms instead of {max(input.numel(), target.numel())}) and the model "
            f"learns their mean. {_fix_for(tuple(input.shape), tuple(target.shape)).capitalize()}.",
            {
                "loss": fn_name,
                "input_shape": list(input.shape),
                "target_shape": list(target.shape),
                "broadcast_shape": list(shape),
            },
        )

    def _report_float64(self, fn_name: str, input: torch.Tensor, target: torch.Tensor) -> None:
        self.emit(
            "TS117",
            f"the target of {fn_name} is float64 while its input is {str(input.dtype).replace('torch.', '')}: "
            f"type promotion computes the loss and its backward in float64 (slow on accelerators; some losses "
            f"then fail in backward with 'Found dtype Double but expected Float'). Such targets usually come from "
            f"NumPy arrays or lists of Python floats; convert them with `target.to(input.dtype)` (or build them "
            f"with dtype=torch.float32).",
            {"loss": fn_name, "input_dtype": input.dtype, "target_dtype": target.dtype},
        )
