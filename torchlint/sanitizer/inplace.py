"""TS105 inplace-on-autograd-tensor: in-place writes that overwrite what autograd saved for backward.

An in-place op is legal as long as autograd never needs the old values
(``nn.ReLU(inplace=True)`` after a linear layer, ``out += identity``,
``loss += term``): only a write into a tensor that a node of a live graph saved
for its backward breaks autograd.  Written directly (or through ``.detach()``,
which shares the version counter), it makes backward raise "modified by an
inplace operation" without saying where the write happened; written through
``.data`` (or by ``optimizer.step()`` on parameters a live graph saved), autograd
cannot notice at all and computes gradients from the new values.

So TS105 is reported when backward really unpacks a saved tensor whose storage
was written after it was saved, at the user line of that write, naming the op
that saved it; graphs dropped without backward (validation, ``retain_graph``
kept for nothing) are never a finding.

How, cheaply:

* ``saved_tensors_hooks``: the pack hook keeps a *detached* alias of each saved
  tensor (no ``grad_fn``, so no reference cycle through the graph: a graph
  dropped without backward is freed at once) with its storage, version and a
  sequence number, and counts the storage as saved while the graph holds it.
  Autograd skips its own version check for hooked tensors, so unpack does it.
* a ``TorchFunctionMode`` sees every torch call made from Python; a per-function
  cache says whether the call writes one of its arguments, so the common call
  costs one dictionary lookup.  A write into a storage that is currently saved
  is remembered (sequence number, user line, op).  The sanitizer's own code and
  ``optimizer.step()`` (without a closure: an optimizer runs many small ops) run
  with the mode taken off the stack (hooks.py); the parameters a step writes are
  compared with the saved storages once per step instead.
* compiled code is left alone: the mode and hooks do nothing while dynamo traces.

The mode costs a few microseconds per torch call, so with ``inplace="auto"``
the check only switches on once a tensor on an accelerator (CUDA) is seen.
"""

from __future__ import annotations

import contextlib
import inspect
import sys

import torch
from torch.overrides import TorchFunctionMode

from .check import BackwardEvent, Check
from .findings import Location
from .forward_lines import forward_location
from .hooks import OWN_MODES
from .locations import user_location
from .tensors import first_param, iter_tensors
from .tracebacks import cleaned

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

try:
    _is_compiling = torch.compiler.is_compiling
except AttributeError:  # torch < 2.3

    def _is_compiling() -> bool:
        return False


_current_node = torch._C._current_autograd_node


def _classify(func) -> int:
    """_ALWAYS, _NEVER, or the positional index of an ``inplace`` flag."""
    name = getattr(func, "__name__", "") or ""
    if name in _INPLACE_DUNDERS:
        return _ALWAYS
    if name.endswith("_") and not name.startswith("_") and name not in _NOT_DATA_WRITES:
        return _ALWAYS
    if name.startswith("_foreach_") and name.endswith("_"):
        return _ALWAYS  # writes every tensor of its first (list) argument
    try:
        parameters = list(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return _NEVER
    return parameters.index("inplace") if "inplace" in parameters else _NEVER


def _storage_key(tensor: torch.Tensor) -> int:
    try:
        return tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError, TypeError):
        return 0  # sparse, nested and other storage-less tensors


class _Saved:
    """What the graph keeps instead of a saved tensor; alive exactly as long as the graph needs it."""

    __slots__ = ("tensor", "version", "key", "seq", "registry", "__weakref__")

    def __init__(self, tensor: torch.Tensor, key: int, seq: int, registry: dict[int, int]):
        self.tensor = tensor.detach()  # an alias without grad_fn: no cycle through the graph
        self.version = tensor._version
        self.key = key
        self.seq = seq
        self.registry = registry
        registry[key] = registry.get(key, 0) + 1

    def __del__(self):
        registry = self.registry
        left = registry.get(self.key, 0) - 1
        if left > 0:
            registry[self.key] = left
        else:
            registry.pop(self.key, None)


class _Write:
    """The latest write into a storage that a live graph saved."""

    __slots__ = ("seq", "location", "op", "shape")

    def __init__(self, seq: int, location: Location, op: str, shape: tuple):
        self.seq = seq
        self.location = location
        self.op = op
        self.shape = shape


def _version_error(packed: _Saved) -> str:
    """autograd's own wording, so that code matching on it keeps working."""
    tensor = packed.tensor
    return (
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [{tensor.type()} {list(tensor.shape)}] is at version {tensor._version}; "
        f"expected version {packed.version} instead."
    )


_disabled_message = getattr(torch._C._autograd, "_saved_tensors_hooks_get_disabled_error_message", None)


def _hooks_disabled() -> bool:
    """Whether saved-tensor hooks are refused here (inside torch.func.grad and its kin)."""
    return _disabled_message is not None and _disabled_message() is not None


def _top_saved_tensors_hooks():
    return torch._C._autograd._top_saved_tensors_default_hooks(False)


def _stacks() -> tuple:
    return (torch._C._len_torch_function_stack(), _top_saved_tensors_hooks())


class _InplaceMode(TorchFunctionMode):
    def __init__(self, check: InplaceCheck):
        super().__init__()
        self.check = check
        self.kinds: dict = {}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        if _is_compiling():  # leave compiled regions exactly as they are
            return func(*args, **kwargs)
        kind = self.kinds.get(func)
        if kind is None:
            kind = self.kinds[func] = _classify(func)
        if kind != _NEVER or "out" in kwargs:
            self.check.inspect_call(func, kind, args, kwargs)
        try:
            return func(*args, **kwargs)
        except BaseException as exc:  # the user's error: shown without this frame
            cleaned(exc)
            raise


class InplaceCheck(Check):
    codes = {"TS105": "inplace-on-autograd-tensor"}

    @classmethod
    def enabled(cls, options) -> bool:
        return options.inplace != "never"

    def install(self) -> None:
        self.active = False
        self._saved: dict[int, int] = {}  # storage key -> number of live saved tensors
        self._writes: dict[int, _Write] = {}  # storage key -> latest write while it was saved
        self._seq = 0
        self._overwritten: list[tuple] = []  # (saved, write, node) found by unpack in this backward
        self._mode: _InplaceMode | None = None
        self._hooks = None
        self._accelerators = frozenset(self.options.accelerator_devices)
        # The mode and hooks stacks as the session found them: "auto" only
        # activates while they are unchanged, so that our entries never sit on
        # top of a user's own `with SomeMode():` or `saved_tensors_hooks`
        # block, whose exit would otherwise pop ours instead of theirs.
        self._base_stacks = _stacks()
        self._patch_transforms()
        if self.options.inplace == "always":
            self.activate()

    def _patch_transforms(self) -> None:
        """torch.func's grad, vjp, jacrev and hessian refuse to run under any
        saved-tensor hooks (they call ``disable_saved_tensors_hooks``, which
        raises when one is set): ours step aside for the transform, and come
        back after it.  In-place writes inside the transform are not seen."""
        graph = torch.autograd.graph
        original = self._original_disable = graph.disable_saved_tensors_hooks
        check = self

        @contextlib.contextmanager
        def disable_saved_tensors_hooks(error_message: str):
            hooks = check._hooks
            top = _top_saved_tensors_hooks()
            lifted = hooks is not None and top is not None and top[0] is hooks.pack_hook
            if lifted:
                hooks.__exit__(None, None, None)
            try:
                with original(error_message):
                    yield
            finally:
                if lifted:
                    hooks.__enter__()

        disable_saved_tensors_hooks.__wrapped__ = original
        graph.disable_saved_tensors_hooks = self._patched_disable = disable_saved_tensors_hooks

    def uninstall(self) -> None:
        graph = torch.autograd.graph
        if graph.disable_saved_tensors_hooks is self._patched_disable:
            graph.disable_saved_tensors_hooks = self._original_disable
        if self._hooks is not None:
            self._hooks.__exit__(None, None, None)
            self._hooks = None
        if self._mode is not None:
            OWN_MODES.remove(self._mode)
            self._mode.__exit__(None, None, None)
            self._mode = None
        self.active = False

    def activate(self) -> None:
        if self.active or _hooks_disabled():
            return  # on already, or inside a torch.func transform: the next root call outside it
        self.active = True
        self._mode = _InplaceMode(self)
        self._mode.__enter__()
        OWN_MODES.append(self._mode)
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()

    # -- saved tensors -------------------------------------------------------------------
    def _pack(self, tensor: torch.Tensor):
        if _is_compiling():
            return tensor
        key = _storage_key(tensor)
        if not key:
            return tensor
        self._seq += 1
        return _Saved(tensor, key, self._seq, self._saved)

    def _unpack(self, packed):
        if not isinstance(packed, _Saved):
            return packed
        write = self._writes.get(packed.key)
        overwritten = write is not None and write.seq > packed.seq
        if overwritten:
            node = _current_node()
            if node is not None:  # inside backward (not a user reading node._saved_*)
                self._overwritten.append((packed, write, node))
        if packed.tensor._version != packed.version:
            error = RuntimeError(_version_error(packed))
            error.torchlint_explained = overwritten  # TS105 names the write; TS101 need not repeat it
            raise error
        return packed.tensor

    # -- auto activation ----------------------------------------------------------------
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

    def on_finding(self, finding) -> None:
        # A backward failed on an in-place write the check was not on to see (a CPU
        # run with inplace="auto"): switch it on, so that the line of the write is
        # reported if it happens again (a loop that catches the error and goes on).
        if (
            finding.code == "TS101"
            and not self.active
            and self.options.inplace == "auto"
            and "modified by an inplace operation" in finding.details.get("error", "")
            and _stacks() == self._base_stacks
        ):
            self.activate()
            self.session.note(
                "an in-place write broke a backward pass (TS101): the in-place check (TS105) is on from now on, "
                "to report the line of the write if it happens again"
            )

    # -- writes -------------------------------------------------------------------------
    def inspect_call(self, func, kind: int, args: tuple, kwargs: dict) -> None:
        """A torch call that may write: remember writes into saved storages."""
        if not self._saved or self.session.in_backward:
            return
        target, via_out = None, False
        if kind == _ALWAYS:
            target = args[0] if args else None
        elif kind >= 0:
            flag = args[kind] if len(args) > kind else kwargs.get("inplace", False)
            if flag is True:
                target = args[0] if args else kwargs.get("input")
        if target is None and kwargs.get("out") is not None:
            target, via_out = kwargs["out"], True
        if target is None:
            return
        for tensor in target if isinstance(target, (tuple, list)) else (target,):
            if isinstance(tensor, torch.Tensor):
                key = _storage_key(tensor)
                if key in self._saved:
                    op = _op_name(func) + ("(out=...)" if via_out else "")
                    self._remember_write(key, user_location(sys._getframe(1)), op, tuple(tensor.shape))

    def _remember_write(self, key: int, location: Location, op: str, shape: tuple) -> None:
        self._seq += 1
        self._writes[key] = _Write(self._seq, location, op, shape)
        if len(self._writes) > 4 * len(self._saved) + 64:  # forget storages no graph saves any more
            self._writes = {k: w for k, w in self._writes.items() if k in self._saved}

    def on_optimizer_pre_step(self, optimizer, args, kwargs) -> None:
        # The step itself runs without the mode (hooks.py); the parameters it is
        # about to update in place are compared with the saved storages here.
        if not self._saved:
            return
        location = None
        for group in optimizer.param_groups:
            for param in group["params"]:
                key = _storage_key(param)
                if key in self._saved:
                    location = location or self.session.user_location()
                    self._remember_write(key, location, f"{type(optimizer).__name__}.step()", tuple(param.shape))

    # -- reporting ----------------------------------------------------------------------
    def around_backward(self, call, event: BackwardEvent):
        self._overwritten = []
        failure = None
        try:
            return call()
        except Exception as exc:
            failure = exc
            raise
        finally:
            if self._overwritten:
                found, self._overwritten = self._overwritten, []
                self._report(found, event, failure)

    def _report(self, found: list, event: BackwardEvent, failure: BaseException | None) -> None:
        reported = set()
        for packed, write, node in found:
            if id(write) in reported:
                continue  # one write, one finding per backward, however many nodes saved it
            reported.add(id(write))
            saver = node.name()
            created = forward_location(node)
            by = f"{saver} (created at {created[0]}{': ' + created[1] if created[1] else ''})" if created else saver
            autograd_noticed = packed.tensor._version != packed.version
            if autograd_noticed:
                consequence = (
                    "so backward raised 'modified by an inplace operation' at "
                    f"{event.location}. Write to a copy (x = x.clone()) or use the out-of-place op"
                )
            else:
                consequence = (
                    "through .data or by an optimizer step, which autograd cannot notice: backward at "
                    f"{event.location} silently computed gradients from the new values. Do not write "
                    "tensors during the forward pass through .data; write to a copy"
                )
            self.emit(
                "TS105",
                f"in-place {write.op} overwrote a tensor (shape {write.shape}) that {by} saved for backward, "
                f"{consequence}",
                {
                    "op": write.op,
                    "shape": list(write.shape),
                    "saved_by": saver,
                    "saved_at": str(created[0]) if created else None,
                    "backward_location": str(event.location),
                    "autograd_noticed": autograd_noticed,
                },
                write.location,
                explains=failure if autograd_noticed else None,
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
