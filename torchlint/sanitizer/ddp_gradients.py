"""TS120 ddp-parameter-without-gradient: DDP parameters the backward pass will not reach.

``DistributedDataParallel`` (with the default ``find_unused_parameters=False``)
all-reduces gradients in buckets as they become ready and waits, at the end
of backward, for every bucket.  A parameter that the loss does not depend on
never gets a gradient: the bucket never fills.  If other ranks do use it the
all-reduce hangs; if no rank does, the next forward fails with "Expected to have
finished reduction in the prior iteration before starting a new one".

The check runs before the collective can hang: when ``loss.backward()`` is
called after a training forward of such a DDP model, it walks the autograd
graph from the loss (the walk DDP itself does with
``find_unused_parameters=True``) and reports the DDP parameters no path
reaches, at the backward line, before backward starts.  Only backward passes
that follow a DDP forward which prepared a gradient reduction pay for the walk.
"""

from __future__ import annotations

import weakref

import torch
from torch.nn.parallel import DistributedDataParallel

from .autograd_graph import graph_roots, walk
from .check import BackwardEvent, TrainingStepCheck
from .findings import CHECK_NAMES

_MAX_LISTED = 6


def reachable_parameters(roots) -> set[int]:
    """``id()`` of every leaf tensor whose gradient a backward pass from ``roots``
    accumulates (the AccumulateGrad nodes of the graph, and leaf roots)."""
    reached = {id(t) for t in roots if isinstance(t, torch.Tensor) and t.grad_fn is None and t.requires_grad}
    for node in walk(graph_roots(roots)):
        variable = getattr(node, "variable", None)
        if variable is not None:
            reached.add(id(variable))
    return reached


def _reduced_parameters(ddp: DistributedDataParallel) -> list[tuple[str, torch.Tensor]]:
    """The parameters whose gradients this DDP model all-reduces."""
    ignored = getattr(ddp, "parameters_to_ignore", ()) or ()
    found, seen = [], set()
    for name, param in ddp.module.named_parameters():
        if param.requires_grad and name not in ignored and id(param) not in seen:
            seen.add(id(param))
            found.append((name, param))
    return found


def _waits_for_every_parameter(ddp: DistributedDataParallel) -> bool:
    """A training forward after which DDP's reducer expects a gradient for every
    parameter (unused ones are found only with find_unused_parameters; a static
    graph learns them on its first iteration)."""
    return (
        ddp.training
        and torch.is_grad_enabled()
        and getattr(ddp, "require_backward_grad_sync", True)
        and not getattr(ddp, "find_unused_parameters", False)
        and not getattr(ddp, "static_graph", False)
    )


class DDPGradientCheck(TrainingStepCheck):
    codes = {"TS120": CHECK_NAMES["TS120"]}

    def install(self) -> None:
        # DDP models whose reducer waits for the next backward pass.
        self._pending: dict[int, weakref.ref] = {}

    def uninstall(self) -> None:
        self._pending.clear()

    def on_root_post(self, module, args, kwargs, output) -> None:
        if isinstance(module, DistributedDataParallel) and _waits_for_every_parameter(module):
            self._pending[id(module)] = weakref.ref(module)

    def on_backward(self, event: BackwardEvent) -> None:
        if not self._pending or event.kind != "backward":
            return
        reached = reachable_parameters(event.tensors)
        for key, ref in list(self._pending.items()):
            ddp = ref()
            if ddp is None:
                del self._pending[key]
                continue
            params = _reduced_parameters(ddp)
            missing = [name for name, p in params if id(p) not in reached]
            if len(missing) == len(params):
                continue  # this backward pass is not the one DDP waits for
            del self._pending[key]
            if missing:
                self._report(ddp, missing, len(params))

    def _report(self, ddp: DistributedDataParallel, missing: list[str], total: int) -> None:
        name = self.session.module_name(ddp)
        qualified = [f"{name}.module.{m}" for m in missing]
        shown = ", ".join(qualified[:_MAX_LISTED])
        if len(qualified) > _MAX_LISTED:
            shown += f" and {len(qualified) - _MAX_LISTED} more"
        self.emit(
            "TS120",
            f"this backward pass will not reach {len(missing)} of the {total} parameters of `{name}` "
            f"(DistributedDataParallel, find_unused_parameters=False): {shown}. DDP waits for their gradients: "
            f"the gradient all-reduce hangs if another rank does use them, and otherwise the next forward fails "
            f"with 'Expected to have finished reduction in the prior iteration'. Make the loss depend on them, "
            f"freeze them with requires_grad_(False) before wrapping the model, or pass "
            f"find_unused_parameters=True to DistributedDataParallel.",
            {"model": name, "parameters": qualified, "reduced_parameters": total},
        )
