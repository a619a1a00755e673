"""TS115 validation-in-train-mode: the runtime twin of TL005.

A root model whose dropout or batch-norm layers behave differently in train
and eval mode runs forward passes with autograd off (``torch.no_grad()``,
``torch.inference_mode()``) while it is still in train mode: validation or
testing without ``model.eval()``.  Dropout keeps zeroing activations, batch
norm normalises with the batch's statistics and folds the evaluation data into
its running averages.

What tells validation apart from the no-grad forwards that training itself
makes: validation is a *run* of such forwards with no optimizer step in
between.  A teacher, an EMA/momentum target network, a GAN's generator feeding
the discriminator or a DQN's action selection run one no-grad forward between
optimizer steps; they are never reported.  Forwards that library code makes
(``torch.optim.swa_utils.update_bn`` recomputes batch-norm statistics in train
mode on purpose; trainer frameworks switch modes themselves) are not judged.

Cost: per root-model call, a grad-mode test and a dictionary lookup; the stack
is looked at only for no-grad forwards of a train-mode model.
"""

from __future__ import annotations

import sys
import weakref

import torch

from . import locations
from .check import TrainingStepCheck
from .findings import CHECK_NAMES, Location
from .hooks import _CALL_IMPL_CODE
from .training_params import mode_dependent_layers

#: No-grad train-mode forwards of one model, without an optimizer step in
#: between, that make a validation run.
RUN_LENGTH = 2
_MAX_LISTED = 4
_MODULE_FILE = torch.nn.Module._call_impl.__code__.co_filename


class _Run:
    """Consecutive no-grad forwards of one train-mode model."""

    __slots__ = ("module", "location", "forwards")

    def __init__(self, module: torch.nn.Module, location: Location):
        self.module = weakref.ref(module)
        self.location = location
        self.forwards = 0


def _called_by_library(module: torch.nn.Module) -> bool:
    """Whether the code that called ``module`` (the frame above its
    ``Module.__call__``) is library code rather than the user's."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code is _CALL_IMPL_CODE and locations.frame_locals(frame).get("self") is module:
            caller = frame.f_back
            while caller is not None and caller.f_code.co_filename == _MODULE_FILE:
                caller = caller.f_back  # Module._wrapped_call_impl
            return caller is None or not locations.is_user_code(caller.f_code)
        frame = frame.f_back
    return False


class ValidationModeCheck(TrainingStepCheck):
    codes = {"TS115": CHECK_NAMES["TS115"]}

    def install(self) -> None:
        self._runs: dict[int, _Run] = {}
        self._layers: dict[int, tuple[weakref.ref, list[str]]] = {}

    def uninstall(self) -> None:
        self._runs.clear()
        self._layers.clear()

    def _mode_layers(self, module: torch.nn.Module) -> list[str]:
        cached = self._layers.get(id(module))
        if cached is None or cached[0]() is not module:
            cached = self._layers[id(module)] = (weakref.ref(module), mode_dependent_layers(module))
        return cached[1]

    def on_root_pre(self, module, args) -> None:
        if torch.is_grad_enabled() or not module.training:
            # A training forward (or an eval-mode one) ends the model's no-grad run.
            if self._runs:
                self._runs.pop(id(module), None)
            return
        if not self._mode_layers(module) or _called_by_library(module):
            return
        run = self._runs.get(id(module))
        if run is None or run.module() is not module:
            run = self._runs[id(module)] = _Run(module, self.session.user_location())
        run.forwards += 1
        if run.forwards == RUN_LENGTH:
            self._report(module, run)

    def on_optimizer_post_step(self, optimizer, args, kwargs) -> None:
        # No-grad forwards between optimizer steps are part of training.
        self._runs.clear()

    def _report(self, module: torch.nn.Module, run: _Run) -> None:
        name = self.session.module_name(module)
        layers = self._mode_layers(module)
        shown = ", ".join(f"{name}.{layer}" for layer in layers[:_MAX_LISTED])
        if len(layers) > _MAX_LISTED:
            shown += f" and {len(layers) - _MAX_LISTED} more"
        self.emit(
            "TS115",
            f"`{name}` runs forward passes with autograd off (torch.no_grad() / inference mode, as in "
            f"validation) while it is in train mode, with no optimizer step in between: its dropout and "
            f"batch-norm layers ({shown}) behave as in training -- dropout zeroes activations, batch norm "
            f"normalises with batch statistics and updates its running averages with this data. Call "
            f"{name}.eval() before evaluating and {name}.train() afterwards. Static twin: TL005.",
            {"model": name, "layers": layers, "twin": "TL005"},
            run.location,
        )
