"""Core of the runtime sanitizer: options, sessions, actions and the check plug-in API.

``torchlint.sanitize(**options)`` returns a :class:`Session`: a context manager
(``with sanitize() as report``) and a decorator (``@sanitize()``).  A session
installs a few *global* hooks once (shared by every check and by nested
sessions), turns each event into calls on the enabled checks, and collects what
they find in a :class:`~torchlint.sanitizer.findings.Report`.

Writing a check (the plug-in interface)
---------------------------------------
A check is a subclass of :class:`Check`.  The session creates one instance per
session (``check.session``, ``check.options``), calls ``install()`` on entry and
``finish()`` then ``uninstall()`` on exit (also when the body raised).  Override
only the event methods you need: the session calls exactly the overridden ones,
so an unused event costs nothing.

=============================================  ====================================================
event method                                   when
=============================================  ====================================================
``on_module_pre(module, args)``                before every ``nn.Module`` call (positional args;
                                               global forward pre-hooks get no kwargs)
``on_module_post(module, args, kwargs, out)``  after every successful module call
``on_root_pre(module, args)``                  before a module call that is not nested in another
                                               module call (the "root model"; loss modules too)
``on_root_post(module, args, kwargs, out)``    after such a root call
``on_loss_pre(fn_name, input, target)``        ``torch.nn.functional`` loss called (also by the
                                               loss modules); ``fn_name`` e.g. ``"cross_entropy"``
``on_loss_post(fn_name, input, target, loss)`` after it returned
``on_optimizer_pre_step(opt, args, kwargs)``   ``Optimizer.step`` starts (global step pre-hook)
``on_optimizer_post_step(opt, args, kwargs)``  ``Optimizer.step`` returned
``on_backward(event)``                         before ``Tensor.backward`` / ``torch.autograd.backward``
                                               / ``torch.autograd.grad``; ``event`` is a
                                               :class:`BackwardEvent` (``kind``, ``tensors``,
                                               ``location``, ``args``, ``kwargs``)
``on_backward_done(event)``                    after it returned
``around_backward(call, event)``               wrap the backward call; must ``return call()``
``on_finding(finding)``                        after any check recorded a finding (also a repeat)
``finish()``                                   once at session exit, before the summary
=============================================  ====================================================

Report with ``self.emit(code, message, details=None, location=None, explains=None)``;
the location defaults to the user's innermost frame on the current stack
(``self.session.user_location()``), dedup, counting and the action
(warn/raise/record) are handled by the session.  ``explains=error`` marks a
finding that explains an exception the check re-raises (a failing backward):
the finding is attached to it as a note, and ``action="raise"`` raises that
error rather than a ``SanitizerError``.  Other helpers on the session:
``module_stack`` (the active module calls, root first), ``model_call_location()``
(the user line that called the root model), ``module_name(module)``
(``"model.encoder.fc1"``), ``parameter_name(param)`` (``"model.head.weight"``),
``root_models()``, ``note(text)`` (one informational line, printed once),
``is_current()`` (this session is the innermost active one: per-tensor hooks a
check registers itself should do nothing while it returns False),
``in_backward`` / ``in_optimizer_step`` (depth counters), ``failed`` (at exit: the
block raised), ``options``.

Check classes declare ``codes = {"TS1xx": "kebab-name"}``, may declare
``option_defaults = {"my_option": 3}`` (extra keyword options of ``sanitize()``,
read back as ``self.options.my_option``), and may override the classmethod
``enabled(options)``.  Built-in checks live in sibling modules that import
this interface from :mod:`.check` (never this module) and are listed in
:mod:`.builtin_checks`.  Third-party checks can call :func:`register_check`.
"""

import functools
import os
import sys
import warnings
import weakref
from collections.abc import Callable, Iterable
from threading import get_ident as _thread_id
from typing import Any

import torch

from . import locations, ranks
from .check import _EVENTS, BackwardEvent, Check, _registered_checks, register_check
from .findings import Location, Report, SanitizerError, SanitizerWarning
from .hooks import _CALL_IMPL_CODE, _SESSIONS, _shared_hooks
from .options import SanitizerOptions
from .tracebacks import cleaned

__all__ = [
    "BackwardEvent",
    "Check",
    "SanitizerOptions",
    "Session",
    "register_check",
    "sanitize",
]


def _check_classes() -> list[type[Check]]:
    from .builtin_checks import BUILTIN_CHECKS

    return [*BUILTIN_CHECKS, *(c for c in _registered_checks if c not in BUILTIN_CHECKS)]


# ---------------------------------------------------------------------------
# the session
# ---------------------------------------------------------------------------
class Session:
    """One sanitizer run.  Use through :func:`sanitize`."""

    def __init__(self, options: SanitizerOptions, check_classes: Iterable[type[Check]] | None = None):
        self.options = options
        self._check_classes = list(check_classes) if check_classes is not None else None
        self.report = Report()
        self.checks: list[Check] = []
        # One module-call stack per thread (DataParallel runs replicas in threads).
        self._stacks: dict[int, list[torch.nn.Module]] = {}
        self.in_backward = 0
        self.in_optimizer_step = 0
        self._loss_depth = 0
        self._active = False
        self._acquired = False
        self._callbacks: dict[str, list[Callable]] = {event: [] for event in _EVENTS}
        self._root_names: dict[int, tuple[Any, dict[int, str]]] = {}
        self._roots: dict[int, weakref.ref] = {}  # root models seen, for parameter_name()
        self._saved_state: dict[str, Any] = {}
        self._finding_depth = 0
        self._rank_reports: ranks.RankReports | None = None  # distributed runs: per-rank report files
        self._outermost = True
        #: The exception that ended the run, when there was one (``torchlint run``
        #: catches the script's own to print it; it sets this for the report).
        self.failure: BaseException | None = None

    @property
    def failed(self) -> bool:
        """The run ended with an exception: the block raised, or ``torchlint run`` caught
        the script's own (checks judge a crashed run less)."""
        return self.failure is not None

    @property
    def module_stack(self) -> list[torch.nn.Module]:
        """The module calls active in this thread, root first."""
        stack = self._stacks.get(_thread_id())
        if stack is None:
            stack = self._stacks[_thread_id()] = []
        return stack

    def is_current(self) -> bool:
        """True while this session is the innermost active one, the one events go to
        (a check's own per-tensor hooks should do nothing while it is False)."""
        return bool(_SESSIONS) and _SESSIONS[-1] is self

    # -- context manager / decorator --------------------------------------
    def __enter__(self) -> Report:
        if self._active:
            raise RuntimeError("this sanitize() session is already active; create a new one with sanitize()")
        self.report = Report()
        self._stacks = {}
        self._rank_reports = None
        self.failure = None
        self._save_global_state()
        classes = self._check_classes if self._check_classes is not None else _check_classes()
        self._outermost = not _SESSIONS
        self._attach_rank()
        _SESSIONS.append(self)
        self._active = True
        try:
            _shared_hooks.acquire()
            self._acquired = True
            locations.reset_cache()
            for cls in classes:
                for klass in cls.__mro__:
                    if klass is not object:
                        locations.mark_library_code(klass)
            for cls in classes:
                if cls.enabled(self.options):
                    self._install_check(cls)
        except BaseException:
            self._teardown()
            raise
        return self.report

    def _install_check(self, cls: type[Check]) -> None:
        check = cls(self)
        try:
            check.install()
        except Exception as error:
            if os.environ.get("TORCHLINT_SANITIZER_STRICT"):
                raise
            try:  # undo whatever the failed install did
                check.uninstall()
            except Exception:
                pass
            text = f"internal error while installing the sanitizer's {cls.__name__} ({error!r}); that check is off"
            self.note(text)
            warnings.warn(text, RuntimeWarning, stacklevel=3)
            return
        self.checks.append(check)
        self._subscribe(check)

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc is not None:
            self.failure = exc
        pending: SanitizerError | None = None
        if exc is not None:
            cleaned(exc)  # the traceback the user sees ends in their code, not ours
        try:
            for check in self.checks:
                try:
                    check.finish()
                except SanitizerError as error:
                    pending = pending or error
                except Exception as error:
                    self._check_failed(check, error)
        finally:
            self._teardown()
            self._publish()
        if pending is not None and exc_type is None:
            raise cleaned(pending) from None
        return False

    def __call__(self, function: Callable) -> Callable:
        """Decorator use: every call runs in a fresh session with these options."""

        @functools.wraps(function)
        def sanitized(*args, **kwargs):
            session = Session(self.options, self._check_classes)
            with session:
                try:
                    return function(*args, **kwargs)
                finally:
                    self.report = session.report

        return sanitized

    def _save_global_state(self) -> None:
        self._saved_state = {
            "anomaly": torch.is_anomaly_enabled(),
            "anomaly_check_nan": torch.is_anomaly_check_nan_enabled(),
            "grad": torch.is_grad_enabled(),
            "warning_filters": list(warnings.filters),
            "function_modes": torch._C._len_torch_function_stack(),
        }

    def _teardown(self) -> None:
        """Undo everything, in reverse order; never raises half-way."""
        errors: list[BaseException] = []
        for check in reversed(self.checks):
            try:
                check.uninstall()
            except Exception as error:  # keep restoring the rest
                errors.append(error)
                if not os.environ.get("TORCHLINT_SANITIZER_STRICT"):
                    warnings.warn(
                        f"internal error while uninstalling {type(check).__name__}: {error!r}", RuntimeWarning
                    )
        self.checks = []
        self._callbacks = {event: [] for event in _EVENTS}
        if self in _SESSIONS:
            _SESSIONS.remove(self)
        if self._acquired:
            self._acquired = False
            _shared_hooks.release()
        self._active = False
        saved = self._saved_state
        if saved:
            torch.autograd.set_detect_anomaly(saved["anomaly"], check_nan=saved["anomaly_check_nan"])
            torch.set_grad_enabled(saved["grad"])
            warnings.filters[:] = saved["warning_filters"]
            warnings._filters_mutated()
        self._stacks = {}
        self._root_names = {}
        if errors and os.environ.get("TORCHLINT_SANITIZER_STRICT"):
            raise errors[0]

    def _attach_rank(self) -> None:
        """In a distributed run, stamp the rank on the report; the outermost session
        keeps this rank's report file (see :mod:`torchlint.sanitizer.ranks`)."""
        info = ranks.detect()
        if info is None:
            return
        self.report.rank, self.report.world_size = info.rank, info.world_size
        if self._outermost:
            self._rank_reports = ranks.RankReports(info, self.options.report, self.options.gather_timeout)
            self._rank_reports.write(self.report, finished=False)

    def _publish(self) -> None:
        """Summary on stderr, JSON report, and hand findings to an enclosing session."""
        if _SESSIONS:
            _SESSIONS[-1].report.merge(self.report)
        if self._rank_reports is not None:
            stream = sys.stderr
            color = bool(getattr(stream, "isatty", lambda: False)()) and "NO_COLOR" not in os.environ
            self._rank_reports.publish(self.report, self.options.summary, color, self.failure)
            return
        if self.options.summary:
            stream = sys.stderr
            color = bool(getattr(stream, "isatty", lambda: False)()) and "NO_COLOR" not in os.environ
            print(self.report.format_summary(color=color), file=stream)
        if self.options.report:
            try:
                self.report.write_json(self.options.report)
            except OSError as error:  # never mask the run's own outcome for a report file
                print(f"torchlint.sanitize: cannot write the report {self.options.report}: {error}", file=sys.stderr)

    def _subscribe(self, check: Check) -> None:
        cls = type(check)
        for event in _EVENTS:
            if getattr(cls, event) is not getattr(Check, event):
                self._callbacks[event].append(getattr(check, event))
        self._refresh_callbacks()

    def _refresh_callbacks(self) -> None:
        cb = self._callbacks
        self._cb_module_pre = cb["on_module_pre"]
        self._cb_module_post = cb["on_module_post"]
        self._cb_root_pre = cb["on_root_pre"]
        self._cb_root_post = cb["on_root_post"]
        self._cb_loss_pre = cb["on_loss_pre"]
        self._cb_loss_post = cb["on_loss_post"]
        self._cb_opt_pre = cb["on_optimizer_pre_step"]
        self._cb_opt_post = cb["on_optimizer_post_step"]

    def _dispatch(self, callbacks: list[Callable], *args: Any) -> None:
        for callback in callbacks:
            try:
                callback(*args)
            except SanitizerError:
                raise
            except Exception as error:
                self._check_failed(callback.__self__, error)

    def _check_failed(self, check: Check, error: BaseException) -> None:
        """A bug in a check must not break the user's training: switch the check off, say so."""
        if os.environ.get("TORCHLINT_SANITIZER_STRICT"):
            raise error
        self._callbacks = {
            event: [c for c in callbacks if getattr(c, "__self__", None) is not check]
            for event, callbacks in self._callbacks.items()
        }
        self._refresh_callbacks()
        text = (
            f"internal error in the sanitizer's {type(check).__name__} ({type(error).__name__}: {error}); "
            f"that check is off for the rest of this session -- please report this"
        )
        self.note(text)
        warnings.warn(text, RuntimeWarning, stacklevel=2)

    # -- reporting ----------------------------------------------------------
    def user_location(self) -> Location:
        """The user's innermost frame on the current stack."""
        return locations.user_location(sys._getframe(1))

    def emit(
        self,
        code: str,
        name: str,
        message: str,
        details: dict[str, Any] | None = None,
        location: Location | None = None,
        explains: BaseException | None = None,
    ):
        """Record a finding and apply the action; returns the Finding.

        ``explains``: an exception this finding explains, which the caller
        re-raises (the user's own error): it gets the finding as a note, and
        ``action="raise"`` leaves raising to the caller."""
        if location is None:
            location = locations.user_location(sys._getframe(1))
        if self.report.rank is None and self._active:
            self._attach_rank()  # the process group may have been created since the session started
        finding, is_new = self.report.add(code, name, message, location, details)
        self._announce(finding)
        if is_new and self._rank_reports is not None:
            self._rank_reports.write(self.report, finished=False)
        action = self.options.action
        if explains is not None:
            explains.torchlint_explained = True
            if is_new and hasattr(explains, "add_note"):  # Python >= 3.11
                explains.add_note(f"torchlint.sanitize: {finding.format()}")
            if action == "raise":
                return finding
        if action == "raise":
            raise SanitizerError(finding) from None
        if action == "warn" and is_new:
            # registry=None: Python keeps no "already shown" memory; the report
            # dedups by location, and the user's warning filters still apply.
            warnings.warn_explicit(
                SanitizerWarning(finding), SanitizerWarning, location.filename, location.lineno, registry=None
            )
        return finding

    def _announce(self, finding) -> None:
        """Tell the checks that listen (``on_finding``); a finding they emit in turn is not re-announced."""
        if self._finding_depth or not self._callbacks["on_finding"]:
            return
        self._finding_depth += 1
        try:
            self._dispatch(self._callbacks["on_finding"], finding)
        finally:
            self._finding_depth -= 1

    def note(self, text: str) -> None:
        """An informational line (not a finding), shown once."""
        if text in self.report.notes:
            return
        self.report.notes.append(text)
        if self.options.action == "warn":
            print(f"torchlint.sanitize: note: {text}", file=sys.stderr)

    def module_name(self, module: torch.nn.Module) -> str:
        """The module's path from the root model, e.g. ``model.encoder.fc1``."""
        root = self.module_stack[0] if self.module_stack else module
        entry = self._root_names.get(id(root))
        if entry is None or entry[0] is not root or id(module) not in entry[1]:
            label = _variable_name(root) or type(root).__name__
            names = {id(m): (f"{label}.{n}" if n else label) for n, m in root.named_modules()}
            entry = self._root_names[id(root)] = (root, names)
        return entry[1].get(id(module), type(module).__name__)

    def model_call_location(self) -> Location:
        """The user's line that called the root model of the current module call
        (``out = model(x)``), even from deep inside its forward; falls back to
        the innermost user frame."""
        frame = sys._getframe(1)
        if self.module_stack:
            root = self.module_stack[0]
            probe = frame
            while probe is not None:
                if probe.f_code is _CALL_IMPL_CODE and locations.frame_locals(probe).get("self") is root:
                    return locations.user_location(probe)
                probe = probe.f_back
        return locations.user_location(frame)

    def parameter_name(self, param: torch.Tensor) -> str | None:
        """``model.head.weight`` for a parameter of a root model seen in this session, else None."""
        for ref in list(self._roots.values()):
            root = ref()
            if root is None:
                continue
            for name, candidate in root.named_parameters():
                if candidate is param:
                    return f"{_variable_name(root) or type(root).__name__}.{name}"
        return None

    def root_models(self) -> list[torch.nn.Module]:
        """Root models called in this session so far (still alive)."""
        return [m for m in (ref() for ref in self._roots.values()) if m is not None]

    # -- event dispatch (called by the shared hooks) ----------------------
    def _module_pre(self, module, args) -> None:
        stack = self.module_stack
        stack.append(module)
        if len(stack) == 1:
            if id(module) not in self._roots:
                self._roots[id(module)] = weakref.ref(module)
            self._dispatch(self._cb_root_pre, module, args)
        self._dispatch(self._cb_module_pre, module, args)

    def _module_post(self, module, args, kwargs, output, failed: bool) -> None:
        stack = self.module_stack
        if stack and stack[-1] is module:
            stack.pop()
        else:  # unbalanced (a hook raised before we pushed): drop through it
            for i in range(len(stack) - 1, -1, -1):
                if stack[i] is module:
                    del stack[i:]
                    break
        if failed:
            return
        # post callbacks see the module popped; re-push so module_name() works.
        stack.append(module)
        try:
            self._dispatch(self._cb_module_post, module, args, kwargs, output)
            if len(stack) == 1:
                self._dispatch(self._cb_root_post, module, args, kwargs, output)
        finally:
            stack.pop()

    def _optimizer_pre(self, optimizer, args, kwargs) -> None:
        self.in_optimizer_step += 1
        self._dispatch(self._cb_opt_pre, optimizer, args, kwargs)

    def _optimizer_post(self, optimizer, args, kwargs) -> None:
        self.in_optimizer_step = max(0, self.in_optimizer_step - 1)
        self._dispatch(self._cb_opt_post, optimizer, args, kwargs)

    def _run_loss(self, original, name, args, kwargs):
        if self._loss_depth:  # a loss implemented with another (or re-dispatched by a mode)
            return original(*args, **kwargs)
        input = args[0] if args else kwargs.get("input")
        target = args[1] if len(args) > 1 else kwargs.get("target")
        self._loss_depth += 1
        try:
            self._dispatch(self._cb_loss_pre, name, input, target)
            loss = original(*args, **kwargs)
            self._dispatch(self._cb_loss_post, name, input, target, loss)
        finally:
            self._loss_depth -= 1
        return loss

    def _run_backward(self, original, kind, args, kwargs):
        callbacks = self._callbacks
        if self.in_backward or not (
            callbacks["on_backward"] or callbacks["on_backward_done"] or callbacks["around_backward"]
        ):
            return original(*args, **kwargs)
        roots = args[0] if args else kwargs.get("tensors" if kind == "backward" else "outputs")
        if isinstance(roots, torch.Tensor):
            roots = (roots,)
        event = BackwardEvent(kind, tuple(roots or ()), locations.user_location(sys._getframe(1)), args, kwargs)
        self._dispatch(callbacks["on_backward"], event)

        def call():
            return original(*args, **kwargs)

        for around in reversed(callbacks["around_backward"]):
            call = functools.partial(around, call, event)
        self.in_backward += 1
        try:
            result = call()
        finally:
            self.in_backward -= 1
        self._dispatch(self._callbacks["on_backward_done"], event)
        return result


def _variable_name(obj: Any) -> str | None:
    """The name the user's code gives ``obj`` (``model``), found in user frames.

    Frames below the first torch frame are hooks and checks (possibly
    user-written plug-ins, whose parameter would name it ``module``): they are
    searched only when no torch frame is on the stack.
    """
    frames = []
    frame = sys._getframe(1)
    while frame is not None and len(frames) < 80:
        frames.append(frame)
        frame = frame.f_back
    first_torch = next((i for i, f in enumerate(frames) if locations.is_torch_file(f.f_code.co_filename)), 0)
    for frame in frames[first_torch:]:
        if locations.is_user_file(frame.f_code.co_filename):
            name = locations.name_in_frame(obj, frame)
            if name:
                return name
    return None


def sanitize(
    *,
    anomaly: str | bool = "auto",
    check_nan: bool = True,
    devices: bool = True,
    dtypes: bool = True,
    nonfinite: bool = True,
    inplace: str = "auto",
    action: str = "warn",
    summary: bool = True,
    report: str | os.PathLike | None = None,
    training_checks: bool = True,
    update_window: int = 3,
    grad_explosion_factor: float = 1e3,
    stall_backwards: int = 20,
    accelerator_devices: Iterable[str] = ("cuda", "xpu", "mps"),
    gather_timeout: float = 30.0,
    **check_options: Any,
) -> Session:
    """Run PyTorch code under the runtime sanitizer.

    Use as ``with torchlint.sanitize() as report:`` or as ``@torchlint.sanitize()``.

    anomaly: TS101. "auto" (default): each autograd node records the user's line that
        created it (cheap); a failing backward is reported at the failing node's line, and
        non-finite gradients switch torch's full anomaly mode on for the next backward
        passes (``anomaly_escalation``, default 10) to pin the op that makes them.
        "full": torch's anomaly mode with full stacks on every step, every backward
        watched. False: neither. (True means "full".)
    check_nan: look for the op whose backward makes NaN/Inf ("auto": after non-finite
        gradients; "full": in every backward).  Never raises for a NaN.
    devices (TS102), dtypes (TS103), nonfinite (TS104): switch those checks.
    inplace: TS105; "auto" (on once an accelerator tensor is seen), "always", "never".
    action: "warn" (one SanitizerWarning per finding and location), "raise"
        (SanitizerError at the first finding) or "record" (only collect).
    summary: print a summary table on stderr at exit.  report: write JSON there at exit.
    training_checks, update_window, grad_explosion_factor, stall_backwards: TS106-TS112.
    accelerator_devices: device types treated like CUDA (inplace "auto", batched
        non-finite checks); pass ("cpu",) to exercise those paths on a CPU.
    gather_timeout: distributed runs: how long the gathering rank waits at exit
        for the other ranks' report files (see torchlint/sanitizer/ranks.py).
    check_options: options declared by plug-in checks (``Check.option_defaults``).
    """
    classes = _check_classes()
    known = {}
    for cls in classes:
        known.update(cls.option_defaults)
    unknown = sorted(set(check_options) - set(known))
    if unknown:
        raise TypeError(f"sanitize() got unexpected keyword argument(s): {', '.join(unknown)}")
    extra = {**known, **check_options}
    options = SanitizerOptions(
        anomaly=anomaly,
        check_nan=check_nan,
        devices=devices,
        dtypes=dtypes,
        nonfinite=nonfinite,
        inplace=inplace,
        action=action,
        summary=summary,
        report=report,
        training_checks=training_checks,
        update_window=update_window,
        grad_explosion_factor=grad_explosion_factor,
        stall_backwards=stall_backwards,
        accelerator_devices=tuple(accelerator_devices),
        gather_timeout=gather_timeout,
        extra=extra,
    )
    return Session(options, classes)
