"""Forward passes in eval mode with autograd on (TS110).

Only the suspicious forwards pay anything: when a root model runs in eval
mode while grad mode is on and its output is part of an autograd graph, we
put a pre-hook on the output's ``grad_fn``.  If a backward pass (or
``torch.autograd.grad``) ever runs through it, the graph was wanted.  The
hook function lives exactly as long as the graph node does, so a
``weakref.finalize`` on it tells us when the graph is freed; freed and never
used means the graph was built for nothing (validation without
``torch.no_grad()``).

Finalizers run at arbitrary points (and swallow exceptions), so they only
queue the finding; :meth:`EvalGraphTracker.flush` reports the queue from a
safe place (the next root forward, optimizer step, or session exit).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

from .findings import Location
from .tensors import output_tensors

#: Output tensors of one forward pass that get a hook (tuples, dicts...).
_MAX_OUTPUTS = 4


class _Graph:
    """One eval-mode forward pass whose graph we watch."""

    __slots__ = ("model", "location", "used", "alive")

    def __init__(self, model: str, location: Location, alive: int):
        self.model = model
        self.location = location
        self.used = False
        self.alive = alive


class EvalGraphTracker:
    def __init__(self, report: Callable[[str, Location], None]):
        self._report = report
        self._finalizers: set[weakref.finalize] = set()
        self._unused: list[_Graph] = []

    def watch(self, model_name: str, output, location: Location) -> None:
        tensors = output_tensors(output, lambda t: t.grad_fn is not None, _MAX_OUTPUTS)
        nodes = {id(t.grad_fn): t.grad_fn for t in tensors}
        if not nodes:
            return
        graph = _Graph(model_name, location, len(nodes))
        for node in nodes.values():
            self._hook(node, graph)

    def _hook(self, node, graph: _Graph) -> None:
        def used(_grad_outputs):
            graph.used = True

        node.register_prehook(used)
        finalizer = weakref.finalize(used, self._freed, graph)
        finalizer.atexit = False
        self._finalizers.add(finalizer)

    def _freed(self, graph: _Graph) -> None:
        graph.alive -= 1
        if graph.alive == 0 and not graph.used:
            self._unused.append(graph)
        # Drop finalizers that already ran (cheap: the set only holds watched graphs).
        self._finalizers = {f for f in self._finalizers if f.alive}

    def flush(self) -> None:
        while self._unused:
            graph = self._unused.pop(0)
            self._report(graph.model, graph.location)

    def close(self) -> None:
        """Stop watching; graphs still alive at exit are not judged."""
        for finalizer in self._finalizers:
            finalizer.detach()
        self._finalizers.clear()
