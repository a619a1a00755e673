"""Per-function facts, computed once and shared by every file that calls the function.

The analysis above this layer (``torchmodel``) writes *summaries* of functions -- what a
function does to its parameters, what it returns -- and keeps them here, so that a helper in
``utils.py`` is summarised once per run however many files call it:

    from torchlint.analysis.summaries import function_summary

    def clears(definition: Definition) -> frozenset[int]:
        ...  # look at definition.node, in definition.ctx; may ask function_summary() of callees

    facts = function_summary(definition, "torch.effects", clears, default=frozenset())

``function_summary(definition, kind, compute, default)`` returns the summary of one kind (a
string naming the family of facts; several families share the cache) for one function, keyed by
``Definition.key`` (file, qualified name, line). ``compute(definition)`` runs at most once per
key and run when its answer is final; it may ask for other summaries, in this file or another.

Answers never depend on the order files are linted in, because only final answers are kept:

* a function asked for while its own summary is being computed (recursion, ``f`` calls ``g``
  calls ``f``) gets ``default``; summaries computed on top of such a provisional answer are not
  kept, except the one of the function that closed the cycle;
* at most ``MAX_SUMMARY_DEPTH`` summaries are computed inside one another; past that the
  answer is ``default``, and the summaries above it are not kept either.

Summaries should be small plain data (sets of parameter indexes, enums, strings), not syntax
nodes: they outlive the parsed files they were computed from (the project drops parsed modules
it no longer needs; see ``analysis.project``).

Each summary also remembers which files its computation read (``Recorder``), so the lint of a
file that uses it lists them in ``FileResult.dependencies`` even when the summary was computed
for another file. With a project (``ctx.project``) the cache belongs to the project and is
shared by the files of one run in one process; without one (a string or standard input) it
belongs to the file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from torchlint.analysis.definitions import Definition

T = TypeVar("T")

# Nested summary computations (f's summary asks for g's, which asks for h's...). Deep enough for
# real helper chains; the bound keeps the cost of one cold file bounded whatever the project.
MAX_SUMMARY_DEPTH = 8


@dataclass
class Frame:
    """What one computation consulted: the files it read, the unfinished summaries it leaned on
    (``hits``), and whether a bound cut it short (``truncated``)."""

    key: Any = None
    deps: set[str] = field(default_factory=set)
    hits: set = field(default_factory=set)
    truncated: bool = False

    @property
    def final(self) -> bool:
        """Whether the answer computed in this frame is what any later computation would give."""
        return not self.truncated and self.hits <= {self.key}


class Recorder:
    """A stack of frames: the lint of one file at the bottom, then lookups and summaries being computed."""

    def __init__(self):
        self.frames: list[Frame] = []

    def consulted(self, path: str) -> None:
        if self.frames:
            self.frames[-1].deps.add(path)

    def consulted_all(self, paths: Iterable[str]) -> None:
        if self.frames:
            self.frames[-1].deps.update(paths)

    def truncate(self) -> None:
        """A bound cut the current computation short: its answer is not final."""
        if self.frames:
            self.frames[-1].truncated = True

    def frame(self, key: Any = None) -> _Nested:
        """A computation inside the current one: what it consults is the caller's too. (A plain
        context manager class: lookups open one per memo miss, tens of thousands per run.)"""
        return _Nested(self, Frame(key))


class _Nested:
    __slots__ = ("recorder", "frame")

    def __init__(self, recorder: Recorder, frame: Frame):
        self.recorder = recorder
        self.frame = frame

    def __enter__(self) -> Frame:
        self.recorder.frames.append(self.frame)
        return self.frame

    def __exit__(self, *exc) -> None:
        frames = self.recorder.frames
        frame = frames.pop()
        if frames:
            outer = frames[-1]
            outer.deps |= frame.deps
            outer.hits |= frame.hits - {frame.key}
            outer.truncated |= frame.truncated


class SummaryCache:
    def __init__(self, recorder: Recorder):
        self.recorder = recorder
        self._done: dict[tuple, tuple[Any, frozenset[str]]] = {}
        self._active: list[tuple] = []

    def get(self, definition: Definition, kind: str, compute: Callable[[Definition], T], default: T) -> T:
        key = (kind, definition.key)
        done = self._done.get(key)
        if done is not None:
            value, deps = done
            self.recorder.consulted_all(deps)
            return value
        recorder = self.recorder
        if key in self._active:
            if recorder.frames:
                recorder.frames[-1].hits.add(key)
            return default
        if len(self._active) >= MAX_SUMMARY_DEPTH:
            recorder.truncate()
            return default
        self._active.append(key)
        try:
            with recorder.frame(key) as frame:
                frame.deps.add(definition.path)
                value = compute(definition)
        finally:
            self._active.pop()
        if frame.final:
            self._done[key] = (value, frozenset(frame.deps))
        return value

    def __len__(self) -> int:
        return len(self._done)


def function_summary(definition: Definition, kind: str, compute: Callable[[Definition], T], default: T) -> T:
    """The ``kind`` summary of the function (or class) ``definition``, computed by ``compute`` once
    per run and shared across files; ``default`` while it cannot be told (see the module docstring)."""
    return summary_cache(definition.ctx).get(definition, kind, compute, default)


def summary_cache(ctx) -> SummaryCache:
    project = ctx.project
    if project is not None:
        return project.summaries
    return ctx.shared("function_summaries", lambda: SummaryCache(Recorder()))
