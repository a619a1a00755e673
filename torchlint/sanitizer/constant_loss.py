"""TS118 loss-constant-no-gradient: a model that cannot learn.

A loss that has exactly the same value from its first backward pass on, while
every gradient it sends to the parameters is zero: training runs, the loss is
finite, and nothing is learned.  ``cross_entropy`` over a single logit is the
classic (the softmax of one class is 1, the loss is 0 whatever the weights);
dead ReLU networks and outputs that do not depend on the parameters are others.

Only "from the start" counts: a loss that becomes constant after it moved (a
margin loss reaching 0 on separable data) is a converged model, not a broken
one.  Per backward call site (``loss.backward()`` line), the first
``constant_loss_steps`` loss values are kept as tensors (no host sync) and
compared once with a single sync; if they are all equal, the next backward
pass of that site is watched with one gradient hook per parameter of the known
models (again read back with one sync), then the site is never looked at again.
"""

from __future__ import annotations

import weakref

import torch

from .check import BackwardEvent, TrainingStepCheck
from .dtypes import INDEX_TARGET_LOSSES
from .findings import CHECK_NAMES, Location
from .tensors import shape_of
from .values import host_values, readable

#: Functional loss calls remembered to name the loss behind a backward pass.
_REMEMBERED_LOSSES = 8


def _any_true(flags: list[torch.Tensor]) -> bool:
    """Whether any of these bool scalars is true: one host sync per device."""
    return any(host_values(flags))


class _Site:
    """One ``backward()`` call site."""

    __slots__ = ("values", "done", "hooks", "nonzero", "reached")

    def __init__(self) -> None:
        self.values: list[torch.Tensor] = []
        self.done = False
        self.hooks: list = []
        self.nonzero: list[torch.Tensor] = []
        self.reached = 0


class _LossCall:
    __slots__ = ("loss", "fn_name", "input_shape", "location")

    def __init__(self, loss: torch.Tensor, fn_name: str, input_shape: tuple, location: Location):
        self.loss = weakref.ref(loss)
        self.fn_name = fn_name
        self.input_shape = input_shape
        self.location = location


class ConstantLossCheck(TrainingStepCheck):
    codes = {"TS118": CHECK_NAMES["TS118"]}
    option_defaults = {"constant_loss_steps": 10}

    @classmethod
    def enabled(cls, options) -> bool:
        return super().enabled(options) and int(options.constant_loss_steps) > 0

    def install(self) -> None:
        self.steps = max(2, int(self.options.constant_loss_steps))
        self._sites: dict[tuple[str, int], _Site] = {}
        self._losses: dict[int, _LossCall] = {}

    def uninstall(self) -> None:
        for site in self._sites.values():
            self._remove_hooks(site)
        self._sites.clear()
        self._losses.clear()

    def on_loss_post(self, fn_name, input, target, loss) -> None:
        if not isinstance(loss, torch.Tensor) or not isinstance(input, torch.Tensor):
            return
        losses = self._losses
        if len(losses) >= _REMEMBERED_LOSSES:
            del losses[next(iter(losses))]
        losses[id(loss)] = _LossCall(loss, fn_name, tuple(input.shape), self.session.user_location())

    def on_backward(self, event: BackwardEvent) -> None:
        if event.kind != "backward" or len(event.tensors) != 1:
            return
        root = event.tensors[0]
        if not isinstance(root, torch.Tensor) or root.numel() != 1 or not root.requires_grad:
            return
        key = (event.location.filename, event.location.lineno)
        site = self._sites.get(key)
        if site is None:
            site = self._sites[key] = _Site()
        if site.done:
            return
        if site.hooks:  # the watched pass raised: give up on this site
            self._remove_hooks(site)
            site.done = True
            return
        values = readable(root)
        if values is None:
            return  # a pass without values (a dry run on the meta device): not one of the steps
        site.values.append(values.detach().reshape(()))
        if len(site.values) < self.steps:
            return
        values = torch.stack(site.values)
        site.values = [values[0]]
        if not bool((values == values[0]).all()):  # the one host sync of this site
            site.done = True
            return
        # Constant so far: watch what this backward pass sends to the parameters.
        self._watch_gradients(site)

    def _watch_gradients(self, site: _Site) -> None:
        seen: set[int] = set()
        for model in self.session.root_models():
            for param in model.parameters():
                if param.requires_grad and id(param) not in seen:
                    seen.add(id(param))
                    site.hooks.append(param.register_hook(self._gradient_probe(site)))

    @staticmethod
    def _gradient_probe(site: _Site):
        def probe(grad: torch.Tensor) -> None:
            site.reached += 1
            values = readable(grad)
            if values is None:  # nothing to read: it does not prove the gradients zero
                site.nonzero.append(torch.ones((), dtype=torch.bool))
            else:
                site.nonzero.append(values.ne(0).any())

        return probe

    @staticmethod
    def _remove_hooks(site: _Site) -> None:
        for handle in site.hooks:
            handle.remove()
        site.hooks.clear()

    def on_backward_done(self, event: BackwardEvent) -> None:
        site = self._sites.get((event.location.filename, event.location.lineno))
        if site is None or site.done or not site.hooks:
            return
        self._remove_hooks(site)
        site.done = True
        if not site.reached or _any_true(site.nonzero):
            return
        self._report(site, event)

    def _report(self, site: _Site, event: BackwardEvent) -> None:
        value = site.values[0].item()
        root = event.tensors[0]
        call = self._losses.get(id(root))
        if call is not None and call.loss() is not root:
            call = None
        location = call.location if call is not None else event.location
        what = f"the loss ({call.fn_name})" if call is not None else "the loss"
        message = (
            f"{what} has been exactly {value:g} since its first backward pass ({self.steps + 1} passes at "
            f"{event.location}) and every gradient it sends to the parameters is zero ({site.reached} "
            f"parameters reached): the model cannot learn."
        )
        if (
            call is not None
            and call.fn_name in INDEX_TARGET_LOSSES
            and len(call.input_shape) >= 2
            and call.input_shape[1] == 1
        ):
            message += (
                f" Its input has shape {shape_of(call.input_shape)}: a single class, whose softmax is always 1, so "
                f"the loss is {value:g} whatever the weights. Give the last layer one output per class (two for a "
                f"binary problem), or use binary_cross_entropy_with_logits with one logit."
            )
        else:
            message += (
                " Check that the loss depends on the model's output (nothing detached, no .item() or "
                "torch.no_grad() on the way), that the activations are not all dead (ReLU), and that the "
                "loss has a non-zero weight."
            )
        self.emit(
            "TS118",
            message,
            {
                "loss": call.fn_name if call is not None else None,
                "value": value,
                "backward_passes": self.steps + 1,
                "backward_location": str(event.location),
                "parameters_reached": site.reached,
            },
            location,
        )
