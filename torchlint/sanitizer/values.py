"""Reading a tensor's values: the one way checks of values (non-finite sums,
gradient norms, "is this gradient zero?") look at data.

Checks of metadata (device, dtype, shape) look at any tensor.  Checks of values
first ask :func:`readable` for the values this process can read, and skip the
tensor when there are none: tensors without data are legal in a training
script (a dry run on the ``meta`` device, ``FakeTensorMode`` shape inference,
``torch.func`` transforms, a lazy module before its first call), and the same
check goes on judging the session's real tensors.

Plain strided tensors, almost every tensor a check sees, take a fast path of a
few attribute reads and are returned as they are (no copy).  The private torch
functions used below are looked up once, each with a fallback, so that a torch
without one of them still imports this module (and treats the tensors that
function would have recognised as readable).
"""

from __future__ import annotations

import torch

from .tensors import UNINITIALIZED


def _private(owner: object, name: str, fallback):
    function = getattr(owner, name, None)
    return function if callable(function) else fallback


def _never(_tensor: torch.Tensor) -> bool:
    return False


def _no_modes() -> int:
    return 0


# A tensor wrapped by a torch.func transform (vmap's batched tensors, grad's
# tracking tensors): reading a value there is an error, or not the user's value.
_functorch_wrapped = _private(getattr(torch._C, "_functorch", None), "is_functorch_wrapped_tensor", _never)
# C++ functionalisation (torch.func.functionalize, export): values are not materialised.
_functional = _private(torch, "_is_functional_tensor", _never)
# A user's TorchDispatchMode (FakeTensorMode, FlopCounterMode, DebugMode...):
# a read would run through it (fake tensors reject real ones; a flop counter
# would count the sanitizer's sums as the user's).
_dispatch_modes = _private(torch._C, "_len_torch_dispatch_stack", _no_modes)

_PLAIN_TYPES = (torch.Tensor, torch.nn.Parameter)
_STRIDED = torch.strided
_SPARSE = frozenset(
    getattr(torch, name)
    for name in ("sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc")
    if hasattr(torch, name)
)
_MKLDNN = getattr(torch, "_mkldnn", None)
# Subclasses that leave __torch_dispatch__ alone keep their values in their own
# storage; those that override it (wrappers) keep them elsewhere.
_NO_DISPATCH = torch.Tensor.__torch_dispatch__


def readable(tensor: torch.Tensor) -> torch.Tensor | None:
    """The values of ``tensor`` this process can read, as a plain tensor of the
    same dtype, or None when there are none to read.

    None for tensors that hold no data (the ``meta`` device, ``FakeTensorMode``
    and tracing tensors, functionalised tensors, lazy modules' uninitialised
    parameters), for tensors wrapped by a ``torch.func`` transform, for
    quantized tensors (integers and a scale: never NaN/Inf), for wrapper
    subclasses whose values live in inner tensors we do not know how to
    combine, and for every tensor while a user's ``TorchDispatchMode`` is
    active.  Otherwise: a plain strided tensor as it is; this rank's shard of a
    DTensor (FSDP2, tensor parallelism); the stored values of a sparse tensor
    (coalesced, so that duplicates do not count twice; its implicit zeros are
    finite and zero); the values of a nested tensor; a subclass that keeps its
    own storage (``as_subclass``) as a plain tensor, so that reading it does not
    run the subclass's ``__torch_function__``."""
    if type(tensor) in _PLAIN_TYPES:
        if (
            tensor.layout is _STRIDED
            and not (tensor.is_meta or tensor.is_quantized or tensor.is_nested)
            and not (_functorch_wrapped(tensor) or _functional(tensor) or _dispatch_modes())
        ):
            return tensor  # the fast path: nothing to unwrap
        return _plain_values(tensor)
    if _dispatch_modes():
        return None
    inner = _unwrapped(tensor)
    return None if inner is None or inner is tensor else readable(inner)


def _plain_values(tensor: torch.Tensor) -> torch.Tensor | None:
    """readable() of a tensor of a plain type that is not a plain strided one."""
    if tensor.is_meta or tensor.is_quantized or _functorch_wrapped(tensor) or _functional(tensor):
        return None
    if _dispatch_modes():
        return None
    layout = tensor.layout
    if tensor.is_nested:  # the strided nested layout
        if not tensor.is_contiguous():
            return torch.cat([component.reshape(-1) for component in tensor.unbind()])
        return tensor.values()
    if layout is _STRIDED:
        return tensor
    if layout in _SPARSE:
        if layout is torch.sparse_coo and not tensor.is_coalesced():
            tensor = tensor.detach().coalesce()
        return tensor.values()
    if layout is _MKLDNN:
        return tensor.to_dense()
    return None  # a layout newer than this code


def _unwrapped(tensor: torch.Tensor) -> torch.Tensor | None:
    """A subclass as the tensor that holds its values (for readable() to judge), or None."""
    if isinstance(tensor, UNINITIALIZED):
        return None
    cls = type(tensor)
    if cls.__torch_dispatch__ is _NO_DISPATCH:
        # Own storage (torchvision's tv_tensors, Parameter subclasses): a plain view, no copy.
        return tensor.as_subclass(torch.Tensor)
    try:
        nested = tensor.is_nested
    except Exception:  # a wrapper whose properties fail outside its own context
        return None
    if nested:  # jagged nested tensors are a Python subclass
        return tensor.values()
    to_local = getattr(cls, "to_local", None)
    if callable(to_local):  # DTensor: judge what this rank holds
        with torch.no_grad():
            return to_local(tensor)
    return None  # fake tensors, functional tensors, other wrappers


def real_view(values: torch.Tensor) -> torch.Tensor:
    """A complex tensor as its real and imaginary parts (a view: the same norm,
    the same NaN/Inf); a real one unchanged."""
    if values.is_complex():
        return torch.view_as_real(values.resolve_conj())
    return values


def can_be_nonfinite(tensor: torch.Tensor) -> bool:
    """Floating or complex: a dtype that can hold NaN/Inf (integers and bools cannot)."""
    return tensor.is_floating_point() or tensor.is_complex()


_SUMMABLE = (torch.float32, torch.float64)
_LOW_PRECISION = (torch.float16, torch.bfloat16)


def finite_sum(values: torch.Tensor) -> torch.Tensor:
    """A real scalar tensor that is NaN/Inf when ``values`` (from :func:`readable`)
    holds NaN/Inf: NaN and Inf propagate through a sum, ``-inf`` and finite
    values sum to ``-inf``.  Half precision accumulates in float32, so that
    large but finite data cannot overflow the sum; float8 and integers are
    widened first (they have no sum of their own in every version)."""
    data = real_view(values.detach())
    if data.dtype in _SUMMABLE:
        return data.sum()
    if data.dtype in _LOW_PRECISION:
        return data.sum(dtype=torch.float32)
    return data.float().sum()


def real_values(tensor: torch.Tensor) -> torch.Tensor | None:
    """:func:`readable` values as a real tensor (a complex one as its real and
    imaginary parts), or None: what norms and dot products take."""
    values = readable(tensor)
    return None if values is None else real_view(values)


def host_values(scalars: list[torch.Tensor]) -> list:
    """The Python values of scalar tensors, in their order, read with one host
    sync per device.  ``torch.stack`` takes tensors of one device only, and a
    model split across accelerators (pipeline or naive model parallelism) has
    parameters, gradients and sums on several: stacking them all at once would
    raise and switch the asking check off."""
    if not scalars:
        return []
    first = scalars[0].device
    if all(s.device == first for s in scalars):
        return torch.stack(scalars).tolist()
    out: list = [None] * len(scalars)
    by_device: dict[torch.device, list[int]] = {}
    for i, s in enumerate(scalars):
        by_device.setdefault(s.device, []).append(i)
    for idx in by_device.values():
        for i, value in zip(idx, torch.stack([scalars[i] for i in idx]).tolist()):
            out[i] = value
    return out
