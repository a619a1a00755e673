"""TS103 dtype-mismatch: float64 data into a float32 model, integer data into
float-only layers, and floating class-index targets for cross-entropy/NLL."""

from __future__ import annotations

import torch
from torch import nn

from .check import Check
from .tensors import first_float_param, shape_of

# Layers that compute with their input's values as floats (Embedding takes indices).
_FLOAT_CONSUMERS: tuple[type, ...] = (
    nn.Linear,
    nn.Bilinear,
    nn.modules.conv._ConvNd,
    nn.modules.batchnorm._NormBase,
    nn.LayerNorm,
    nn.GroupNorm,
    nn.RNNBase,
)
#: Losses whose target holds class indices (or, with the same shape as the input, probabilities).
INDEX_TARGET_LOSSES = ("cross_entropy", "nll_loss")


def _autocast_on(device_type: str) -> bool:
    try:
        return torch.is_autocast_enabled(device_type)
    except TypeError:  # torch < 2.4
        if device_type == "cpu":
            return torch.is_autocast_cpu_enabled()
        return torch.is_autocast_enabled()


class DtypeCheck(Check):
    codes = {"TS103": "dtype-mismatch"}

    @classmethod
    def enabled(cls, options) -> bool:
        return bool(options.dtypes)

    def on_module_pre(self, module, args) -> None:
        if not args or module._forward_pre_hooks:
            return  # no input, or the module's own pre-hooks (which run after ours) may cast it
        param = first_float_param(module)
        if param is None:
            return
        first = args[0]
        if (
            isinstance(first, torch.Tensor)
            and not first.is_floating_point()
            and not first.is_complex()
            and isinstance(module, _FLOAT_CONSUMERS)
        ):
            name = self.session.module_name(module)
            self.emit(
                "TS103",
                f"argument 0 of {name} ({type(module).__name__}) has dtype {first.dtype} but this layer needs "
                f"floating input ({param.dtype}); convert the data with .to({param.dtype}) "
                f"(integer class indices belong in nn.Embedding or a loss target)",
                {"module": name, "argument": "argument 0", "input_dtype": first.dtype, "module_dtype": param.dtype},
                self.session.model_call_location(),
            )
            return
        for index, value in enumerate(args):
            if (
                isinstance(value, torch.Tensor)
                and value.is_floating_point()
                and value.dtype != param.dtype
                and not _autocast_on(value.device.type)
            ):
                name = self.session.module_name(module)
                self.emit(
                    "TS103",
                    f"argument {index} of {name} ({type(module).__name__}) has dtype {value.dtype} but the "
                    f"module's parameters are {param.dtype}; convert the input with .to({param.dtype}) "
                    f"(float64 usually comes from numpy: torch.from_numpy(a).float())",
                    {
                        "module": name,
                        "argument": f"argument {index}",
                        "input_dtype": value.dtype,
                        "module_dtype": param.dtype,
                    },
                    self.session.model_call_location(),
                )
                return

    def on_loss_pre(self, fn_name, input, target) -> None:
        if fn_name not in INDEX_TARGET_LOSSES:
            return
        if not (isinstance(input, torch.Tensor) and isinstance(target, torch.Tensor)):
            return
        if not target.is_floating_point() or target.dim() != input.dim() - 1:
            return
        # (N, C, d1...) input with an (N, d1...) target: the shape says class indices.
        if input.dim() >= 2 and tuple(target.shape) != tuple(input.shape[:1]) + tuple(input.shape[2:]):
            return
        self.emit(
            "TS103",
            f"the target of {fn_name} has dtype {target.dtype} but its shape {shape_of(target)} says class "
            f"indices for input {shape_of(input)}; pass target.long() (floating targets must have the "
            f"input's shape and hold class probabilities)",
            {"loss": fn_name, "target_dtype": target.dtype, "target_shape": shape_of(target)},
        )
