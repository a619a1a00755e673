"""The autograd graph of one backward pass: walking it, the node that failed,
and the node that turned finite gradients into NaN/Inf.

Hooks registered here never reference their node (a closure holding the node
that holds the closure is a reference cycle through C++ that Python's garbage
collector cannot see); they ask autograd for the node being executed instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import torch

from .locations import frame_locals
from .values import can_be_nonfinite, readable

_AccumulateGrad = "AccumulateGrad"
_NAMED_NODE = re.compile(r"\b(?:Function\s+)?(\w+Backward\w*)\b")
_VERSION_ERROR = "modified by an inplace operation"
_current_node = torch._C._current_autograd_node


def graph_roots(tensors: Iterable) -> list:
    return [t.grad_fn for t in tensors if isinstance(t, torch.Tensor) and t.grad_fn is not None]


def walk(roots: Iterable) -> Iterator:
    """Every node reachable from ``roots`` (each once), roots first."""
    seen: set[int] = set()
    kept = []  # keeps each node's Python object alive, so that its id() stays unique
    pending = [node for node in roots if node is not None]
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        kept.append(node)
        yield node
        for child, _ in node.next_functions:
            if child is not None and id(child) not in seen:
                pending.append(child)


def all_finite(tensors) -> bool:
    """Whether no tensor among ``tensors`` holds NaN/Inf in its readable values
    (tensors without data count as finite: there is nothing to pin there)."""
    for tensor in tensors:
        if isinstance(tensor, torch.Tensor) and can_be_nonfinite(tensor):
            values = readable(tensor)
            if values is not None and values.numel() and not bool(torch.isfinite(values).all()):
                return False
    return True


class NanWatch:
    """Finds the first node of a backward pass whose incoming gradients are
    finite but whose outputs are not (what ``check_nan`` finds, without raising)."""

    def __init__(self, roots: Iterable):
        self.culprit = None
        self.nodes = 0
        self._handles = []
        for node in walk(roots):
            if node.name() == _AccumulateGrad:
                continue  # it only adds into .grad
            self._handles.append(node.register_hook(self._after_node))
            self.nodes += 1

    def _after_node(self, grad_inputs, grad_outputs) -> None:
        # grad_outputs: the gradients flowing into the node; grad_inputs: what it computed.
        if self.culprit is None and not all_finite(grad_inputs) and all_finite(grad_outputs):
            self.culprit = _current_node()

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []


def _saved_tensor_error(node) -> str | None:
    """The error raised when unpacking one of ``node``'s saved tensors, if any."""
    for name in dir(node):
        if name.startswith("_saved_") and not name.endswith("_raw"):
            try:
                getattr(node, name)
            except RuntimeError as error:
                return str(error)
            except Exception:
                continue
    return None


def failing_nodes(roots: Iterable, error: BaseException) -> list:
    """The nodes that may have raised ``error`` during backward, best guess first.

    A custom ``autograd.Function`` whose ``backward`` raised is found through its
    ``ctx`` (the node itself) in the traceback; a version-counter error through
    the node whose saved tensor can no longer be unpacked (nodes that already ran
    have released theirs); otherwise the nodes whose type the message names."""
    tb = error.__traceback__
    while tb is not None:
        for value in frame_locals(tb.tb_frame).values():
            if isinstance(value, torch.autograd.function.BackwardCFunction):
                return [value]
        tb = tb.tb_next
    text = str(error)
    nodes = list(walk(roots))
    if _VERSION_ERROR in text:
        broken = [n for n in nodes if _VERSION_ERROR in (_saved_tensor_error(n) or "")]
        if broken:
            return broken
    named = {match.group(1) for match in _NAMED_NODE.finditer(text)}
    # "output 0 of SigmoidBackward0" names the producer of a tensor, not the failing node.
    producers = set(re.findall(r"output \d+ of (\w+)", text))
    return [n for n in nodes if n.name() in named - producers]
