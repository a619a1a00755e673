"""TS102 device-mismatch: module inputs and optimizer state on the wrong device.

One event is reported once.  An input on the wrong device meets module after
module inside one call of the root model: the root itself (when it has
parameters of its own), the submodule that takes it, and the submodules that
take what is computed from it (on the meta device, or wherever torch let it
through).  So within one root-model call, each pair (input device, module
device) is reported once; the next root call is a new event.
"""

from __future__ import annotations

import torch

from .check import Check
from .tensors import describe, first_param, iter_tensors


def _harmless(tensor: torch.Tensor, device: torch.device) -> bool:
    # torch accepts 0-dim CPU tensors (Python-scalar-like) next to any device.
    return tensor.device.type == "cpu" and tensor.dim() == 0


class DeviceCheck(Check):
    codes = {"TS102": "device-mismatch"}

    @classmethod
    def enabled(cls, options) -> bool:
        return bool(options.devices)

    def install(self) -> None:
        # optimizer -> fingerprint of the state last found consistent
        self._checked_state: dict[int, tuple] = {}
        # (input device, module device) pairs reported in the current root-model call
        self._reported: set[tuple[torch.device, torch.device]] = set()

    def on_root_pre(self, module, args) -> None:
        self._reported.clear()

    # -- module inputs ------------------------------------------------------
    def on_module_pre(self, module, args) -> None:
        # A module's own pre-hooks run after ours and may move its inputs
        # (accelerate's device_map offloading does): leave those modules alone.
        if module._forward_pre_hooks or not args:
            return
        own = first_param(module)
        if own is None:
            return
        device = own.device
        for path, tensor in iter_tensors(args):
            if tensor.device != device and not _harmless(tensor, device):
                self._report_input(module, describe(path), tensor.device, device)
                return

    def on_module_post(self, module, args, kwargs, output) -> None:
        # Global pre-hooks do not receive keyword arguments; check those here.
        if not kwargs or module._forward_pre_hooks:
            return
        own = first_param(module)
        if own is None:
            return
        device = own.device
        for path, tensor in iter_tensors((), kwargs):
            if tensor.device != device and not _harmless(tensor, device):
                self._report_input(module, describe(path), tensor.device, device)
                return

    def _report_input(self, module, argument: str, got: torch.device, expected: torch.device) -> None:
        if (got, expected) in self._reported:
            return  # the same input (or what the model computed from it) met another module
        self._reported.add((got, expected))
        name = self.session.module_name(module)
        message = (
            f"{argument} of {name} ({type(module).__name__}) is on {got} but the module's parameters are "
            f"on {expected}; move the input with .to({str(expected)!r}) (or the model with .to({str(got)!r}))"
        )
        location = self.session.model_call_location()
        details = {"module": name, "argument": argument, "input_device": str(got), "module_device": str(expected)}
        inner = self.session.user_location()
        if inner != location:
            details["inner_location"] = str(inner)
            message += f" (inside the model at {inner})"
        self.emit("TS102", message, details, location)

    # -- optimizer state ----------------------------------------------------
    def on_optimizer_pre_step(self, optimizer, args, kwargs) -> None:
        state = optimizer.state
        if not state:
            return
        first = next(iter(state))
        fingerprint = (len(state), getattr(first, "device", None), id(state))
        if self._checked_state.get(id(optimizer)) == fingerprint:
            return
        for group in optimizer.param_groups:
            for param in group["params"]:
                entry = state.get(param)
                if not entry:
                    continue
                for key, value in entry.items():
                    if isinstance(value, torch.Tensor) and value.dim() > 0 and value.device != param.device:
                        self._report_state(optimizer, param, key, value.device)
                        return
        self._checked_state[id(optimizer)] = fingerprint

    def _report_state(self, optimizer, param, key: str, got: torch.device) -> None:
        pname = self.session.parameter_name(param) or f"a parameter of shape {tuple(param.shape)}"
        opt_name = type(optimizer).__name__
        message = (
            f"{opt_name} keeps its state {key!r} of {pname} on {got} but the parameter is on {param.device}; "
            f"create the optimizer after model.to(device), or load its state_dict after moving the model"
        )
        self.emit(
            "TS102",
            message,
            {
                "optimizer": opt_name,
                "parameter": pname,
                "state": key,
                "state_device": str(got),
                "parameter_device": str(param.device),
            },
        )
