"""The check plug-in API: the :class:`Check` base class and :class:`BackwardEvent`.

How checks are written and which events they get is described in the
docstring of :mod:`torchlint.sanitizer.core`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .findings import CHECK_NAMES, Finding, Location
from .options import SanitizerOptions

if TYPE_CHECKING:
    from .core import Session


# ---------------------------------------------------------------------------
# the check plug-in interface
# ---------------------------------------------------------------------------
class Check:
    """Base class of runtime checks.  See the module docstring."""

    #: code -> kebab-case name of every finding this check can emit.
    codes: dict[str, str] = {}
    #: extra keyword options of sanitize() this check understands, with defaults.
    option_defaults: dict[str, Any] = {}

    def __init__(self, session: Session):
        self.session = session
        self.options = session.options

    @classmethod
    def enabled(cls, options: SanitizerOptions) -> bool:
        return True

    def install(self) -> None:
        """Called on session entry, after the shared hooks are in place."""

    def uninstall(self) -> None:
        """Called on session exit, also when the body raised; undo install()."""

    def finish(self) -> None:
        """Called on session exit before uninstall(); may emit findings."""

    # Event methods: declared here for documentation; the session only calls
    # the ones a subclass overrides.
    def on_module_pre(self, module, args) -> None: ...
    def on_module_post(self, module, args, kwargs, output) -> None: ...
    def on_root_pre(self, module, args) -> None: ...
    def on_root_post(self, module, args, kwargs, output) -> None: ...
    def on_loss_pre(self, fn_name, input, target) -> None: ...
    def on_loss_post(self, fn_name, input, target, loss) -> None: ...
    def on_optimizer_pre_step(self, optimizer, args, kwargs) -> None: ...
    def on_optimizer_post_step(self, optimizer, args, kwargs) -> None: ...
    def on_backward(self, event: BackwardEvent) -> None: ...
    def on_backward_done(self, event: BackwardEvent) -> None: ...
    def around_backward(self, call: Callable[[], Any], event: BackwardEvent) -> Any:
        return call()

    def on_finding(self, finding: Finding) -> None: ...

    def emit(
        self,
        code: str,
        message: str,
        details: dict | None = None,
        location: Location | None = None,
        explains: BaseException | None = None,
    ):
        """Shortcut for ``session.emit`` with the name taken from ``codes``."""
        name = self.codes.get(code) or CHECK_NAMES.get(code, code)
        return self.session.emit(code, name, message, details, location, explains=explains)


class TrainingStepCheck(Check):
    """A check of the training step itself (TS106-TS120): on unless ``training_checks=False``."""

    @classmethod
    def enabled(cls, options: SanitizerOptions) -> bool:
        return bool(getattr(options, "training_checks", True))


_EVENTS = (
    "on_module_pre",
    "on_module_post",
    "on_root_pre",
    "on_root_post",
    "on_loss_pre",
    "on_loss_post",
    "on_optimizer_pre_step",
    "on_optimizer_post_step",
    "on_backward",
    "on_backward_done",
    "around_backward",
    "on_finding",
)

_registered_checks: list[type[Check]] = []


def register_check(cls: type[Check]) -> type[Check]:
    """Add a check class to every future session (usable as a class decorator)."""
    if cls not in _registered_checks:
        _registered_checks.append(cls)
    return cls


@dataclass
class BackwardEvent:
    """One call of ``Tensor.backward``, ``torch.autograd.backward`` or ``torch.autograd.grad``."""

    kind: str  # "backward" or "grad"
    tensors: tuple  # the roots of the backward pass (the loss)
    location: Location  # the user's line that called it
    args: tuple
    kwargs: dict
