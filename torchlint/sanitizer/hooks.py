"""The global hooks and patches shared by all sessions.

They are installed once, when the outermost session starts, and removed when
the last one ends; every event goes to the innermost active session
(``_SESSIONS[-1]``), which fans it out to its checks.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.modules.module as _module_hooks
import torch.optim.optimizer as _optimizer_hooks

from . import warning_locations
from .tracebacks import cleaned

if TYPE_CHECKING:
    from .core import Session

# ---------------------------------------------------------------------------
# the shared global hooks (installed once, whatever the nesting depth)
# ---------------------------------------------------------------------------
_SESSIONS: list[Session] = []  # active sessions, innermost last
_CALL_IMPL_CODE = torch.nn.Module._call_impl.__code__

LOSS_FUNCTIONS = (
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
    "poisson_nll_loss",
    "gaussian_nll_loss",
    "soft_margin_loss",
    "multilabel_soft_margin_loss",
    "multilabel_margin_loss",
    "multi_margin_loss",
    "hinge_embedding_loss",
)

try:
    _is_compiling = torch.compiler.is_compiling
except AttributeError:  # torch < 2.3

    def _is_compiling() -> bool:
        return False


# ---------------------------------------------------------------------------
# the sanitizer's own function modes
# ---------------------------------------------------------------------------
# Function modes the sanitizer pushed (the in-place check's).  The sanitizer's
# own code and optimizer steps run with them taken off torch's mode stack, so
# that they cost something only for the user's torch calls.
OWN_MODES: list = []
_off_for_step: list = []  # modes taken off for the optimizer step in progress


def _take_own_mode_off():
    """Pop the sanitizer's mode if it is on top of the stack; return it (or None)."""
    size = torch._C._len_torch_function_stack()
    if size and any(torch._C._get_function_stack_at(size - 1) is mode for mode in OWN_MODES):
        return torch._C._pop_torch_function_stack()
    return None


def _put_back_after_step() -> None:
    while _off_for_step:
        torch._C._push_on_torch_function_stack(_off_for_step.pop())


def closure_of(args: tuple, kwargs: dict) -> tuple[Any, str | int | None]:
    """The closure passed to ``optimizer.step`` and where it sits in the call
    (``args`` include the optimizer itself at index 0)."""
    if len(args) > 1 and callable(args[1]):
        return args[1], 1
    closure = kwargs.get("closure")
    if callable(closure):
        return closure, "closure"
    return None, None


def _entry_point(function: Callable) -> Callable:
    """Mark a function torch calls into the sanitizer: the outermost frame of
    ours, where an exception passing through loses the sanitizer's frames (a
    bare raise adds none back; see tracebacks.py)."""

    @functools.wraps(function)
    def entry(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except BaseException as exc:
            cleaned(exc)
            raise

    return entry


def _without_own_mode(original: Callable) -> Callable:
    @functools.wraps(original)
    def call(*args: Any, **kwargs: Any) -> Any:
        mode = _take_own_mode_off() if OWN_MODES else None
        try:
            return original(*args, **kwargs)
        finally:
            if mode is not None:
                torch._C._push_on_torch_function_stack(mode)

    call.__torchlint_original__ = original
    return call


def _deliver(method: Callable, *args: Any) -> Any:
    """Call an event method of the innermost session, with the sanitizer's own
    function mode off meanwhile."""
    mode = _take_own_mode_off() if OWN_MODES else None
    try:
        return method(*args)
    finally:
        if mode is not None:
            torch._C._push_on_torch_function_stack(mode)


@_entry_point
def _module_pre_hook(module, args):
    if _off_for_step:  # a step that raised never reached its post hook
        _put_back_after_step()
    if _SESSIONS and not _is_compiling():
        _deliver(_SESSIONS[-1]._module_pre, module, args)


@_entry_point
def _module_post_hook(module, args, *rest):
    # Normal path: (kwargs, output).  When forward raised, torch calls
    # always_call hooks as (module, args, output) and silences their errors.
    if _SESSIONS and not _is_compiling():
        if len(rest) == 2:
            _deliver(_SESSIONS[-1]._module_post, module, args, rest[0], rest[1], False)
        else:
            _deliver(_SESSIONS[-1]._module_post, module, args, {}, None, True)


@_entry_point
def _optimizer_pre_hook(optimizer, args, kwargs):
    if _SESSIONS and not _is_compiling():
        _deliver(_SESSIONS[-1]._optimizer_pre, optimizer, args, kwargs)
        # An optimizer runs many small ops, none of them the user's forward
        # pass (a closure is), so the step runs without the sanitizer's mode.
        if OWN_MODES and closure_of(args, kwargs)[0] is None:
            mode = _take_own_mode_off()
            if mode is not None:
                _off_for_step.append(mode)


@_entry_point
def _optimizer_post_hook(optimizer, args, kwargs):
    if _off_for_step:
        _put_back_after_step()
    if _SESSIONS and not _is_compiling():
        _deliver(_SESSIONS[-1]._optimizer_post, optimizer, args, kwargs)


class _SharedHooks:
    """Global hooks and patches, reference counted across nested sessions."""

    def __init__(self) -> None:
        self.users = 0
        self._handles: list[Any] = []
        self._patches: list[tuple[Any, str, Any]] = []

    def acquire(self) -> None:
        if self.users == 0:
            try:
                self._install()
            except BaseException:
                self._uninstall()
                raise
        self.users += 1

    def release(self) -> None:
        self.users -= 1
        if self.users == 0:
            self._uninstall()

    def _patch(self, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        original = getattr(owner, name)
        self._patches.append((owner, name, original))
        setattr(owner, name, make(original))

    def _install(self) -> None:
        # Warnings torch attributes to the sanitizer's frames name the user's line.
        warning_locations.install()
        self._handles.append(_module_hooks.register_module_forward_pre_hook(_module_pre_hook))
        self._handles.append(
            _module_hooks.register_module_forward_hook(_module_post_hook, with_kwargs=True, always_call=True)
        )
        self._handles.append(_optimizer_hooks.register_optimizer_step_pre_hook(_optimizer_pre_hook))
        self._handles.append(_optimizer_hooks.register_optimizer_step_post_hook(_optimizer_post_hook))
        # Tensor.backward calls torch.autograd.backward through the module
        # attribute, so patching the function covers both spellings.
        self._patch(torch.autograd, "backward", lambda orig: _wrap_backward(orig, "backward"))
        self._patch(torch.autograd, "grad", lambda orig: _wrap_backward(orig, "grad"))
        # zero_grad() sets .grad attributes one by one: each a torch call the
        # in-place mode would see, and none of them the user's forward pass.
        self._patch(torch.optim.Optimizer, "zero_grad", _without_own_mode)
        functional = torch.nn.functional
        for name in LOSS_FUNCTIONS:
            if hasattr(functional, name):
                self._patch(functional, name, lambda orig, name=name: _wrap_loss(orig, name))

    def _uninstall(self) -> None:
        warning_locations.uninstall()
        _put_back_after_step()
        while self._handles:
            handle = self._handles.pop()
            handle.remove()
            # torch's handle forgets the with_kwargs flag of a global forward hook: left
            # there, it keeps torch believing global hooks exist (slow module calls, and
            # a warning at every call of a compiled module).
            _module_hooks._global_forward_hooks_with_kwargs.pop(handle.id, None)
        while self._patches:
            owner, name, original = self._patches.pop()
            setattr(owner, name, original)


_shared_hooks = _SharedHooks()


def _wrap_backward(original: Callable, kind: str) -> Callable:
    @functools.wraps(original)
    @_entry_point
    def backward(*args, **kwargs):
        if _off_for_step:
            _put_back_after_step()
        if not _SESSIONS or _is_compiling():
            return original(*args, **kwargs)
        return _deliver(_SESSIONS[-1]._run_backward, original, kind, args, kwargs)

    backward.__torchlint_original__ = original
    return backward


def _wrap_loss(original: Callable, name: str) -> Callable:
    @functools.wraps(original)
    @_entry_point
    def loss(*args, **kwargs):
        if not _SESSIONS or _is_compiling():
            return original(*args, **kwargs)
        return _deliver(_SESSIONS[-1]._run_loss, original, name, args, kwargs)

    loss.__torchlint_original__ = original
    return loss
