"""TS119 sampler-epoch-not-set: a shuffling ``DistributedSampler`` that is
never told the epoch (the runtime twin of TL021's set_epoch case).

``DistributedSampler`` seeds its shuffle with ``seed + epoch``; the epoch only
changes through ``set_epoch()``.  Without it every epoch visits the data in
the same order on every rank.  The check wraps ``DistributedSampler.__iter__``
for the session: a pass that starts with the same epoch as the sampler's last
*complete* pass is reported (an unfinished pass -- a peek with
``next(iter(loader))``, a loop cut short -- proves nothing).  Cost: one
generator step per index drawn from a distributed sampler.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Iterator

from torch.utils.data import DataLoader, DistributedSampler

from . import locations
from .check import TrainingStepCheck
from .findings import CHECK_NAMES
from .locations import frame_locals, name_in_frame


class _SamplerState:
    __slots__ = ("completed_epoch", "reported")

    def __init__(self) -> None:
        self.completed_epoch: int | None = None
        self.reported = False


def _watch(iterator: Iterator, state: _SamplerState, epoch: int) -> Iterator:
    yield from iterator
    state.completed_epoch = epoch


def _loader_name(sampler: DistributedSampler, frame) -> str | None:
    """The variable of a user frame holding the DataLoader that draws from ``sampler``."""
    while frame is not None:
        if locations.is_user_code(frame.f_code):
            for name, value in frame_locals(frame).items():
                if isinstance(value, DataLoader) and (
                    value.sampler is sampler or getattr(value.batch_sampler, "sampler", None) is sampler
                ):
                    return name
        frame = frame.f_back
    return None


class SamplerEpochCheck(TrainingStepCheck):
    codes = {"TS119": CHECK_NAMES["TS119"]}

    def install(self) -> None:
        self._states: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._original = DistributedSampler.__dict__["__iter__"]
        original, check = self._original, self

        def __iter__(sampler):
            iterator = original(sampler)
            if not sampler.shuffle or not check.session.is_current():
                return iterator
            return check._on_pass(sampler, iterator)

        __iter__.__torchlint_original__ = original
        DistributedSampler.__iter__ = __iter__

    def uninstall(self) -> None:
        DistributedSampler.__iter__ = self._original
        self._states = weakref.WeakKeyDictionary()

    def _on_pass(self, sampler: DistributedSampler, iterator: Iterator) -> Iterator:
        state = self._states.get(sampler)
        if state is None:
            state = self._states[sampler] = _SamplerState()
        epoch = sampler.epoch
        if state.completed_epoch == epoch and not state.reported:
            state.reported = True
            self._report(sampler, epoch)
        return _watch(iterator, state, epoch)

    def _report(self, sampler: DistributedSampler, epoch: int) -> None:
        frame = locations.user_frame(sys._getframe(1))
        loader = _loader_name(sampler, frame)
        sampler_name = name_in_frame(sampler, frame) or "sampler"
        owner = f"the DistributedSampler of `{loader}`" if loader else f"DistributedSampler `{sampler_name}`"
        self.emit(
            "TS119",
            f"{owner} starts a new pass over the data with the same epoch ({epoch}) as its previous complete "
            f"pass: set_epoch() is not called with the new epoch, so every epoch shuffles the data in the same "
            f"order, on every rank. Call `{sampler_name}.set_epoch(epoch)` at the start of each epoch, before "
            f"iterating the loader. Static twin: TL021.",
            {"loader": loader, "sampler": sampler_name, "epoch": epoch, "twin": "TL021"},
        )
