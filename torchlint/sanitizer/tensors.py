"""Finding the tensors in a call's arguments (nested in lists, tuples, dicts)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import torch

_MAX_DEPTH = 4
_MAX_ITEMS = 256  # do not walk a list of thousands of tensors on every call

Path = tuple  # ("arg", 0), ("kwarg", "mask"), then nested keys/indices


def iter_tensors(args: tuple, kwargs: dict | None = None) -> Iterator[tuple[Path, torch.Tensor]]:
    """Yield ``(path, tensor)`` for every tensor in positional and keyword arguments."""
    for index, value in enumerate(args):
        if isinstance(value, torch.Tensor):
            yield ("arg", index), value
        elif isinstance(value, (list, tuple, dict)):
            yield from _nested(value, ("arg", index), 1)
    if kwargs:
        for key, value in kwargs.items():
            if isinstance(value, torch.Tensor):
                yield ("kwarg", key), value
            elif isinstance(value, (list, tuple, dict)):
                yield from _nested(value, ("kwarg", key), 1)


def _nested(value: Any, path: Path, depth: int) -> Iterator[tuple[Path, torch.Tensor]]:
    if depth > _MAX_DEPTH:
        return
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for n, (key, item) in enumerate(items):
        if n >= _MAX_ITEMS:
            return
        if isinstance(item, torch.Tensor):
            yield (*path, key), item
        elif isinstance(item, (list, tuple, dict)):
            yield from _nested(item, (*path, key), depth + 1)


def output_tensors(output: Any, keep: Callable[[torch.Tensor], bool], limit: int = 4) -> list[torch.Tensor]:
    """The first ``limit`` tensors of a call's output (a tensor, or tuples, lists
    and dicts of them) for which ``keep`` is true, in order."""
    found: list[torch.Tensor] = []
    stack = [output]
    while stack and len(found) < limit:
        value = stack.pop()
        if isinstance(value, torch.Tensor):
            if keep(value):
                found.append(value)
        elif isinstance(value, (tuple, list)):
            stack.extend(reversed(value))
        elif isinstance(value, dict):
            stack.extend(reversed(list(value.values())))
    return found


def describe(path: Path) -> str:
    """``("arg", 0)`` -> ``argument 0``; ``("kwarg", "x", 1)`` -> ``argument 'x'[1]``."""
    kind, head, *rest = path
    text = f"argument {head}" if kind == "arg" else f"argument {head!r}"
    return text + "".join(f"[{key!r}]" for key in rest)


def shape_of(value: torch.Tensor | tuple[int, ...]) -> str:
    """``(32, 1)`` / ``(32,)`` for a tensor or a shape, as Python writes the tuple."""
    return str(tuple(int(s) for s in getattr(value, "shape", value)))


# Lazy modules (nn.LazyLinear...) hold these until their first call; they have
# no dtype yet, and global pre-hooks run before the lazy module materialises them.
UNINITIALIZED = (torch.nn.parameter.UninitializedParameter, torch.nn.parameter.UninitializedBuffer)


def first_param(module: torch.nn.Module) -> torch.Tensor | None:
    """The module's own first parameter, else its first buffer (no recursion: cheap)."""
    for tensor in module._parameters.values():
        if tensor is not None:
            return None if isinstance(tensor, UNINITIALIZED) else tensor
    for tensor in module._buffers.values():
        if tensor is not None:
            return None if isinstance(tensor, UNINITIALIZED) else tensor
    return None


def first_float_param(module: torch.nn.Module) -> torch.Tensor | None:
    for tensor in module._parameters.values():
        if tensor is None:
            continue
        if isinstance(tensor, UNINITIALIZED):
            return None
        if tensor.is_floating_point():
            return tensor
    return None
