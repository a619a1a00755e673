"""TS113 loss-scale-collapse: a GradScaler that skips step after step.

With mixed precision a ``GradScaler`` multiplies the loss by a large scale and
skips ``optimizer.step()`` whenever the scaled gradients overflow, halving the
scale: a few skipped steps are how it finds its scale, and then and again later
they are normal.  When the gradients are non-finite at every scale (a NaN that
does not come from overflow, or a model whose values overflow fp16 anyway),
the scale keeps halving and the model stops training, silently: each step is
skipped.  TS113 reports a scaler that skipped ``scale_collapse_steps`` steps in
a row (by then its scale fell by 2**n), or more than half of its last
``_WINDOW`` steps.

Cost: no host sync.  A step is known skipped when ``scaler.update()`` finds
that none of the optimizers ``scaler.step()`` served this iteration really
stepped (the optimizer step hooks saw that); the scale is read once, when a
finding is made.
"""

from __future__ import annotations

from collections import deque

import torch

from .check import TrainingStepCheck

_WINDOW = 100


def _scaler_class():
    return getattr(torch.amp, "GradScaler", None) or torch.cuda.amp.GradScaler  # torch < 2.3


class _ScalerState:
    __slots__ = ("consecutive", "recent", "reported", "start_scale")

    def __init__(self):
        self.consecutive = 0
        self.recent: deque[bool] = deque(maxlen=_WINDOW)  # True: that update followed a skipped step
        self.reported = False
        self.start_scale: float | None = None


class LossScaleCheck(TrainingStepCheck):
    codes = {"TS113": "loss-scale-collapse"}
    option_defaults = {"scale_collapse_steps": 16}

    def install(self) -> None:
        self._stepped: set[int] = set()  # optimizers that really stepped since the last update()
        self._scalers: dict[int, _ScalerState] = {}
        self._limit = max(1, int(self.options.scale_collapse_steps))
        scaler_class = _scaler_class()
        original = self._original = scaler_class.update
        check = self

        def update(scaler, new_scale=None):
            collapsed = new_scale is None and check.session.is_current() and check._count_update(scaler)
            result = original(scaler, new_scale)
            if collapsed:
                check._report(scaler, collapsed)  # after update(): the scale it fell to
            return result

        update.__wrapped__ = original
        scaler_class.update = update
        self._patched = update

    def uninstall(self) -> None:
        scaler_class = _scaler_class()
        if scaler_class.update is self._patched:
            scaler_class.update = self._original

    def on_optimizer_post_step(self, optimizer, args, kwargs) -> None:
        self._stepped.add(id(optimizer))

    def _count_update(self, scaler) -> str | None:
        """Note whether this iteration's steps were skipped; what collapsed, if it just did."""
        served = list(getattr(scaler, "_per_optimizer_states", {}))  # id() of each optimizer it served
        if not getattr(scaler, "_enabled", False) or not served:
            return None
        skipped = not any(opt_id in self._stepped for opt_id in served)
        self._stepped.clear()
        state = self._scalers.get(id(scaler))
        if state is None:
            state = self._scalers[id(scaler)] = _ScalerState()
            state.start_scale = float(getattr(scaler, "_init_scale", 0.0) or 0.0)
        state.consecutive = state.consecutive + 1 if skipped else 0
        state.recent.append(skipped)
        if state.reported:
            return None
        if state.consecutive >= self._limit:
            return f"skipped {state.consecutive} optimizer steps in a row"
        if len(state.recent) == _WINDOW and sum(state.recent) > _WINDOW // 2:
            return f"skipped {sum(state.recent)} of its last {_WINDOW} optimizer steps"
        return None

    def _report(self, scaler, what: str) -> None:
        state = self._scalers[id(scaler)]
        state.reported = True
        scale = float(scaler.get_scale())  # one host sync, once
        self.emit(
            "TS113",
            f"the GradScaler {what}: the scaled gradients held Inf/NaN every time, so its loss scale fell "
            f"from {state.start_scale:g} to {scale:g} and the model is not being trained. Steps a "
            f"GradScaler skips now and then are normal; this is not overflow any more. TS101 pins the op "
            f"whose backward makes the non-finite values on the next steps; also check the data (TS104) "
            f"and ops that overflow in float16 (use bfloat16, or run them in float32)",
            {
                "skipped_in_a_row": state.consecutive,
                "skipped_recently": sum(state.recent),
                "window": len(state.recent),
                "initial_scale": state.start_scale,
                "scale": scale,
            },
        )
