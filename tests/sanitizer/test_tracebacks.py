"""Tracebacks and warnings users can read: with action="raise" the exception points at
the user's line with no sanitizer frame in front and no chained exception, and torch's
own warnings keep their real source location while the in-place check forwards calls."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import traceback
import warnings

import pytest

import torchlint
import torchlint.sanitizer

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

SANITIZER_DIR = os.path.dirname(torchlint.sanitizer.__file__)


def frames_of(exc: BaseException) -> list[traceback.FrameSummary]:
    return traceback.extract_tb(exc.__traceback__)


def own_frames(exc: BaseException) -> list[str]:
    return [f"{f.filename}:{f.lineno}" for f in frames_of(exc) if f.filename.startswith(SANITIZER_DIR)]


def test_a_sanitizer_error_ends_at_the_users_line(mark):
    model = nn.Linear(4, 2)
    with pytest.raises(torchlint.SanitizerError) as info:
        with torchlint.sanitize(action="raise", summary=False):
            model(torch.randn(3, 4, dtype=torch.float64))  # raise-line
    error = info.value
    assert own_frames(error) == []
    last = frames_of(error)[-1]
    assert (last.filename, last.lineno) == (__file__, mark("raise-line"))
    assert error.__cause__ is None and (error.__context__ is None or error.__suppress_context__)


def test_caught_inside_the_block_too(mark):
    model = nn.Linear(4, 2)
    with torchlint.sanitize(action="raise", summary=False):
        try:
            model(torch.randn(3, 4, dtype=torch.float64))  # inside-line
        except torchlint.SanitizerError as exc:
            error = exc
    assert own_frames(error) == []
    # after the user's line only torch's own module-call frames, which ran the hook
    names = [(f.filename, f.lineno) for f in frames_of(error)]
    after = names[names.index((__file__, mark("inside-line"))) + 1 :]
    assert after and all(
        filename.endswith(os.path.join("torch", "nn", "modules", "module.py")) for filename, _ in after
    )


@pytest.mark.parametrize("options", [{}, {"inplace": "always"}])
def test_the_users_own_errors_show_the_frames_plain_python_shows(options):
    def broken_backward():
        weight = torch.randn(3, requires_grad=True)
        hidden = weight.sigmoid()
        hidden.mul_(2)
        hidden.sum().backward()

    def shape_error():
        nn.Linear(4, 2)(torch.randn(3, 5))

    for run in (broken_backward, shape_error):
        with pytest.raises(RuntimeError) as plain:
            run()
        with pytest.raises(RuntimeError) as sanitized:
            with torchlint.sanitize(summary=False, action="record", **options):
                run()
        assert own_frames(sanitized.value) == []

        # the user's frames and the frame that raised are the ones plain Python shows (torch adds a
        # few dispatch frames of its own while a hook or a function mode is installed)
        def shown(error):
            frames = frames_of(error)
            return [f.name for f in frames if f.filename == __file__] + [frames[-1].name]

        assert shown(sanitized.value) == shown(plain.value)


def test_the_printed_traceback_of_a_script(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(
            """
            import torch, torchlint
            from torch import nn

            def train(model):
                for _ in range(2):
                    model(torch.randn(3, 4, dtype=torch.float64))

            with torchlint.sanitize(action="raise", summary=False):
                train(nn.Linear(4, 2))
            """
        )
    )
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    stderr = result.stderr
    assert "torchlint/sanitizer" not in stderr.replace(os.sep, "/")
    assert "During handling of the above exception" not in stderr and "direct cause" not in stderr
    lines = [line.strip() for line in stderr.splitlines()]
    last_frame = max(i for i, line in enumerate(lines) if line.startswith("File "))
    assert lines[last_frame].endswith("line 7, in train") and "dtype=torch.float64" in lines[last_frame + 1]
    assert lines[-1].startswith("torchlint.sanitizer.findings.SanitizerError: ") and "TS103" in lines[-1]


# -- torch's warnings keep their source location -------------------------------------------
def warnings_of(run, options: dict | None) -> list[tuple[str, int, str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if options is None:
            run()
        else:
            with torchlint.sanitize(summary=False, action="record", **options):
                run()
    return [
        (w.filename, w.lineno, str(w.message)[:40])
        for w in caught
        if not issubclass(w.category, torchlint.SanitizerWarning)
    ]


def python_level_warning():
    prediction = torch.randn(8, 1, requires_grad=True)
    # warns: the target's size differs from the input's
    F.mse_loss(prediction, torch.randn(8)).backward()  # mse-line


def cpp_level_warning():
    x = torch.randn(2, 3, 4)
    torch.set_warn_always(True)
    try:
        # C++ TORCH_WARN: .T on a 3-d tensor is deprecated
        return x.T  # t-line
    finally:
        torch.set_warn_always(False)


@pytest.mark.parametrize("run,marker", [(python_level_warning, "mse-line"), (cpp_level_warning, "t-line")])
def test_torch_warnings_keep_their_location_with_the_inplace_check_on(run, marker, mark):
    plain = warnings_of(run, options=None)
    assert plain and plain[0][:2] == (__file__, mark(marker))
    assert warnings_of(run, {"inplace": "always"}) == plain
    assert warnings_of(run, {"inplace": "always", "anomaly": "full"}) == plain


def test_default_filters_still_show_a_warning_once_per_location(mark):
    def twice():
        for _ in range(2):
            python_level_warning()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        with torchlint.sanitize(summary=False, action="record", inplace="always"):
            twice()
            cpp_level_warning()
    shown = [(w.filename, w.lineno) for w in caught]
    assert shown.count((__file__, mark("mse-line"))) == 1 and (__file__, mark("t-line")) in shown


def test_the_users_own_warnings_are_still_shown_once_per_location(net, batches):
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        with torchlint.sanitize(summary=False, action="record", inplace="always", anomaly="full"):
            for x, y in batches:
                optimizer.zero_grad()
                F.cross_entropy(net(x), y).backward()
                optimizer.step()
                warnings.warn("learning rate below 1e-3", UserWarning)  # every step, shown once
    assert [str(w.message) for w in caught] == ["learning rate below 1e-3"]
