"""TS105 inplace-on-autograd-tensor: in-place writes that autograd cannot survive.

Reported at the user line of the in-place op, during forward, when it writes

* a tensor that requires grad while grad mode is on (``h.relu_()``,
  ``F.relu(h, inplace=True)``, ``h[mask] = 0``, ``torch.add(a, b, out=h)``), or
* the storage of a tensor currently saved for backward, including through a
  ``.data`` or ``.detach()`` alias, which autograd's version counter cannot see
  and which silently corrupts gradients.

Not reported: optimizer updates and parameter initialisation (they run under
``no_grad`` on tensors no live graph saved), ``zero_grad`` (gradients do not
require grad), and anything inside backward.

How: a ``TorchFunctionMode`` sees every torch call made from Python; a
per-function cache says whether the call writes one of its arguments, so the
common case costs a dictionary lookup.  Saved tensors are tracked with
``saved_tensors_hooks``: the pack hook wraps each saved tensor in a small
object whose lifetime is the graph's, and counts its storage as saved while it
lives.  Because autograd skips its own version-counter check for tensors that
went through hooks, the unpack hook performs that check itself.

The function mode costs ~15% on small models, so with ``inplace="auto"`` the
check only switches on once a tensor on an accelerator (CUDA) is seen.
"""

from __future__ import annotations

import inspect

import torch
from torch.overrides import TorchFunctionMode

from .check import Check
from .tensors import first_param, iter_tensors

# Calls whose name ends in "_" but that do not write tensor data.
_NOT_DATA_WRITES = frozenset({"requires_grad_", "share_memory_", "detach_", "retain_grad_", "record_stream_"})
_INPLACE_DUNDERS = frozenset(
    {
        "__setitem__",
        "__iadd__",
        "__isub__",
        "__imul__",
        "__itruediv__",
        "__ifloordiv__",
        "__imod__",
        "__ipow__",
        "__iand__",
        "__ior__",
        "__ixor__",
        "__ilshift__",
        "__irshift__",
        "__imatmul__",
    }
)

_ALWAYS = -1  # the call always writes args[0]
_NEVER = -2  # the call never writes (unless out= is given)


def _classify(func) -> int:
    """_ALWAYS, _NEVER, or the positional index of an ``inplace`` flag."""
    name = getattr(func, "__name__", "") or ""
    if name in _INPLACE_DUNDERS:
        return _ALWAYS
    if name.endswith("_") and not name.startswith("_") and name not in _NOT_DATA_WRITES:
        return _ALWAYS
    try:
        parameters = list(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return _NEVER
    return parameters.index("inplace") if "inplace" in parameters else _NEVER


class _Saved:
    """What the graph keeps instead of a saved tensor; alive exactly as long as the graph needs it."""

    __slots__ = ("tensor", "version", "key", "registry", "__weakref__")

    def __init__(self, tensor: torch.Tensor, key: int, registry: dict[int, int]):
        self.tensor = tensor
        self.version = tensor._version
        self.key = key
        self.registry = registry
        registry[key] = registry.get(key, 0) + 1

    def __del__(self):
        registry = self.registry
        left = registry.get(self.key, 0) - 1
        if left > 0:
            registry[self.key] = left
        else:
            registry.pop(self.key, None)


def _stacks() -> tuple:
    return (
        torch._C._len_torch_function_stack(),
        torch._C._autograd._top_saved_tensors_default_hooks(False),
    )


def _storage_key(tensor: torch.Tensor) -> int | None:
    try:
        return tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError, TypeError):
        return None  # sparse, nested and other storage-less tensors


class _InplaceMode(TorchFunctionMode):
    def __init__(self, check: InplaceCheck):
        super().__init__()
        self.check = check
        self.kinds: dict = {}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kind = self.kinds.get(func)
        if kind is None:
            kind = self.kinds[func] = _classify(func)
        if kind != _NEVER or kwargs:
            target, via_out = None, False
            if kind == _ALWAYS:
                target = args[0] if args else None
            elif kind >= 0:
                flag = args[kind] if len(args) > kind else (kwargs or {}).get("inplace", False)
                if flag is True:
                    target = args[0] if args else (kwargs or {}).get("input")
            if target is None and kwargs and kwargs.get("out") is not None:
                target, via_out = kwargs["out"], True
            if target is not None:
                self.check.inspect_write(func, target, via_out)
        return func(*args, **(kwargs or {}))


class InplaceCheck(Check):
    codes = {"TS105": "inplace-on-autograd-tensor"}

    @classmethod
    def enabled(cls, options) -> bool:
        return options.inplace != "never"

    def install(self) -> None:
        self.active = False
        self._saved: dict[int, int] = {}  # storage data_ptr -> number of live saved tensors
        self._mode: _InplaceMode | None = None
        self._hooks = None
        self._accelerators = frozenset(self.options.accelerator_devices)
        # The mode and hooks stacks as the session found them: "auto" only
        # activates while they are unchanged, so that our entries never sit on
        # top of a user's own `with SomeMode():` or `saved_tensors_hooks`
        # block, whose exit would otherwise pop ours instead of theirs.
        self._base_stacks = _stacks()
        if self.options.inplace == "always":
            self.activate()

    def uninstall(self) -> None:
        if self._hooks is not None:
            self._hooks.__exit__(None, None, None)
            self._hooks = None
        if self._mode is not None:
            self._mode.__exit__(None, None, None)
            self._mode = None
        self.active = False

    def activate(self) -> None:
        if self.active:
            return
        self.active = True
        saved = self._saved

        def pack(tensor):
            key = _storage_key(tensor)
            if key is None or not key:
                return tensor
            return _Saved(tensor, key, saved)

        def unpack(packed):
            if not isinstance(packed, _Saved):
                return packed
            tensor = packed.tensor
            if tensor._version != packed.version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: [{tensor.type()} {list(tensor.shape)}] is at version {tensor._version}; "
                    f"expected version {packed.version} instead (reported by torchlint.sanitize, see TS105)"
                )
            return tensor

        self._mode = _InplaceMode(self)
        self._mode.__enter__()
        self._hooks = torch.autograd.graph.saved_tensors_hooks(pack, unpack)
        self._hooks.__enter__()

    def on_root_pre(self, module, args) -> None:
        # inplace="auto": switch on at the first accelerator tensor or module.
        if self.active or self.options.inplace != "auto" or _stacks() != self._base_stacks:
            return
        accelerators = self._accelerators
        own = first_param(module)
        if own is not None and own.device.type in accelerators:
            self.activate()
            return
        for _, tensor in iter_tensors(args):
            if tensor.device.type in accelerators:
                self.activate()
                return

    def inspect_write(self, func, target, via_out: bool = False) -> None:
        session = self.session
        if session.in_backward:
            return
        targets = target if isinstance(target, (tuple, list)) else (target,)
        for tensor in targets:
            if not isinstance(tensor, torch.Tensor):
                continue
            grad_on = torch.is_grad_enabled()
            if grad_on and tensor.requires_grad:
                self._report(func, "a tensor that requires grad", tensor, via_out)
                return
            if self._saved and (grad_on or not session.in_optimizer_step):
                key = _storage_key(tensor)
                if key and key in self._saved:
                    self._report(func, "the storage of a tensor saved for backward", tensor, via_out)
                    return

    def _report(self, func, what: str, tensor: torch.Tensor, via_out: bool = False) -> None:
        op = _op_name(func) + ("(out=...)" if via_out else "")
        if "saved for backward" in what:
            advice = (
                "backward will use the modified values (through .data/.detach() autograd cannot even notice); "
                "write to a copy (x = x.clone()) or make the op out-of-place"
            )
        else:
            advice = "use the out-of-place form (x = x.op(...), F.relu(x) without inplace=True)"
        self.emit(
            "TS105",
            f"in-place {op} during forward writes {what} (shape {tuple(tensor.shape)}); {advice}",
            {"op": op, "target": what, "shape": list(tensor.shape)},
        )


def _op_name(func) -> str:
    name = getattr(func, "__name__", repr(func))
    if name == "__setitem__":
        return "index assignment (x[...] = ...)"
    qualname = getattr(func, "__qualname__", name)
    owner = getattr(func, "__module__", "") or ""
    if qualname.startswith(("Tensor.", "TensorBase.", "_TensorBase.")):
        return f"Tensor.{name}"
    if owner.startswith("torch.nn.functional"):
        return f"F.{name}(inplace=True)"
    return f"torch.{name}" if name else repr(func)
