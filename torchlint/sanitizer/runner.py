"""``torchlint run [options] SCRIPT [ARGS...]``: run a script as ``__main__`` under ``sanitize()``.

The script sees ``sys.argv == [SCRIPT, *ARGS]``, its absolute path as ``__file__`` and its
own directory first on ``sys.path``, as with ``python SCRIPT ARGS``; a folder runs its
``__main__.py``.  The exit status is the script's own: 0, the code of a ``SystemExit``, 1 for
an uncaught exception (its traceback is printed, then the sanitizer summary) and for a
syntax error (Python's own report, before the sanitizer starts).  Usage errors exit 2.

Also runnable as ``python -m torchlint.sanitizer.runner``.
"""

from __future__ import annotations

import argparse
import os
import runpy
import signal
import sys
import threading
import traceback

from .ranks import Terminated


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="torchlint run",
        description="Run a Python training script under torchlint's runtime sanitizer.",
    )
    parser.add_argument(
        "--raise", dest="raise_", action="store_true", help="stop at the first finding (SanitizerError)"
    )
    parser.add_argument(
        "--anomaly",
        choices=("auto", "full", "off"),
        default="auto",
        help="TS101: auto = forward lines recorded cheaply, torch's full anomaly mode only for a few steps "
        "after non-finite gradients (default); full = torch's anomaly mode on every step; off = neither",
    )
    parser.add_argument("--no-anomaly", action="store_true", help="same as --anomaly off")
    parser.add_argument(
        "--inplace",
        choices=("auto", "always", "never"),
        default="auto",
        help="in-place checks (TS105): auto = only once a CUDA tensor is seen (default)",
    )
    parser.add_argument("--report", metavar="FILE", help="write the findings as JSON to FILE at exit")
    # nargs="?" so that a missing SCRIPT is reported alone (not "SCRIPT, ARGS").
    parser.add_argument("script", metavar="SCRIPT", nargs="?", help="the Python script to run as __main__")
    parser.add_argument("args", metavar="ARGS", nargs=argparse.REMAINDER, help="arguments for the script")
    return parser


def _exit_code(code: object) -> int:
    """Translate a SystemExit code the way the interpreter does."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _print_script_traceback(exc: BaseException, script: str) -> None:
    """Print the traceback as `python SCRIPT` would: from the script's frame on."""
    tb = exc.__traceback__
    target = os.path.abspath(script)
    first = tb
    while first is not None and os.path.abspath(first.tb_frame.f_code.co_filename) != target:
        first = first.tb_next
    traceback.print_exception(type(exc), exc, first or tb)


def _unrunnable(script: str) -> str | None:
    """Why ``python SCRIPT`` could not start, or None. A folder runs through its
    ``__main__.py``, as with Python."""
    if os.path.isdir(script):
        if os.path.isfile(os.path.join(script, "__main__.py")):
            return None
        return f"{script} is a directory without a __main__.py; name the script to run"
    if not os.path.exists(script):
        return f"no such script: {script}"
    return None


def _compile(target: str):
    """The script's code, compiled before the sanitizer starts; on a syntax error print Python's
    own report (file, line, caret, message; no traceback through torchlint) and return None."""
    path = os.path.join(target, "__main__.py") if os.path.isdir(target) else target
    try:
        with open(path, "rb") as handle:
            return compile(handle.read(), path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:  # ValueError: NUL bytes on Python < 3.12
        sys.stderr.write("".join(traceback.format_exception_only(type(exc), exc)))
        return None


def _run_as_main(target: str, code) -> None:
    """Run a script file as ``python SCRIPT`` does: a fresh ``__main__`` module whose
    ``__file__`` is the absolute path, with ``sys.argv[0]`` left as the user typed it
    (``runpy.run_path`` would replace it). A folder runs its ``__main__.py`` through runpy."""
    if os.path.isdir(target):
        runpy.run_path(target, run_name="__main__")
        return
    import builtins
    import importlib.machinery
    import types

    module = types.ModuleType("__main__")
    module.__file__ = target
    module.__loader__ = importlib.machinery.SourceFileLoader("__main__", target)
    module.__builtins__ = builtins
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = module  # pickle (DataLoader workers, multiprocessing) finds the script's classes
    try:
        exec(code, module.__dict__)
    finally:
        sys.modules["__main__"] = saved


class _SigtermGuard:
    """While the script runs, SIGTERM raises :class:`Terminated` in it; once the
    session is publishing, SIGTERM only asks for the signal to be re-sent after
    (so that the summary and the report are complete).  Installed only where
    SIGTERM still does its default (nobody chose otherwise) and on the main thread."""

    def __init__(self) -> None:
        self.installed = False
        self.armed = False
        self.requested = False

    def _handler(self, signum, frame) -> None:
        self.requested = True
        if self.armed:
            self.armed = False  # a second SIGTERM while unwinding only re-asks
            raise Terminated(signum)

    def __enter__(self) -> _SigtermGuard:
        if threading.current_thread() is threading.main_thread() and (
            signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        ):
            signal.signal(signal.SIGTERM, self._handler)
            self.installed = self.armed = True
        return self

    def __exit__(self, *exc) -> None:
        self.armed = False
        if self.installed and signal.getsignal(signal.SIGTERM) == self._handler:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def die_if_requested(self) -> None:
        """Die by SIGTERM as the plain run would have (its exit status included)."""
        if self.requested:
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGTERM)


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    try:
        options = parser.parse_args(sys.argv[1:] if argv is None else argv)
        if options.script is None:
            parser.error("the following arguments are required: SCRIPT")
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return _exit_code(exc.code)
    script = options.script
    problem = _unrunnable(script)
    if problem:
        print(f"torchlint run: error: {problem}", file=sys.stderr)
        return 2
    # As `python SCRIPT` does since 3.9: the script runs under its absolute path, so its
    # `__file__`, tracebacks and the sanitizer's locations read as they would under Python.
    target = os.path.abspath(script)
    code = _compile(target)
    if code is None:
        return 1

    try:
        from .core import sanitize
    except ImportError as exc:
        print(f"torchlint run: error: the sanitizer needs torch ({exc})", file=sys.stderr)
        return 2

    session = sanitize(
        action="raise" if options.raise_ else "warn",
        anomaly=False if options.no_anomaly or options.anomaly == "off" else options.anomaly,
        inplace=options.inplace,
        report=options.report,
    )
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [script, *options.args]
    sys.path.insert(0, target if os.path.isdir(target) else os.path.dirname(target))
    status = 0
    guard = _SigtermGuard()
    try:
        with guard, session:
            try:
                _run_as_main(target, code)
            except SystemExit as exc:
                status = _exit_code(exc.code)
            except (KeyboardInterrupt, Terminated) as exc:
                session.failure = exc
                status = 130
            except Exception as exc:
                session.failure = exc
                _print_script_traceback(exc, target)
                status = 1
            guard.armed = False  # the session publishes next: let it finish
    except Exception:  # a finding raised at session exit with --raise
        traceback.print_exc()
        status = status or 1
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
    guard.die_if_requested()
    return status


if __name__ == "__main__":
    raise SystemExit(main())
