"""The public API: actions, dedup, summary, JSON report, decorator, options, plug-in checks."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import pytest

import torchlint
from torchlint.sanitizer import CHECK_NAMES, Check, Finding, Report

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional


def feed_float64(model, times=1):
    for _ in range(times):
        with pytest.raises(RuntimeError):
            model(torch.randn(2, 4, dtype=torch.float64))  # float64-line


def test_public_names_are_reexported_lazily():
    assert torchlint.Finding is Finding and torchlint.Report is Report
    assert issubclass(torchlint.SanitizerWarning, UserWarning)
    # not a RuntimeError: `except RuntimeError` (OOM retries) must not swallow action="raise"
    assert issubclass(torchlint.SanitizerError, Exception)
    assert not issubclass(torchlint.SanitizerError, RuntimeError)
    assert CHECK_NAMES["TS105"] == "inplace-on-autograd-tensor"


def test_importing_torchlint_and_the_report_classes_does_not_import_torch():
    code = (
        "import sys, torchlint; from torchlint.sanitizer import Finding, Report, SanitizerError; "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_dedup_by_code_and_location_with_counts(quiet, mark):
    model = nn.Linear(4, 2)
    with torchlint.sanitize(**quiet) as report:
        feed_float64(model, times=3)
        with pytest.raises(RuntimeError):
            model(torch.randn(2, 4, dtype=torch.float64))  # second-line
    assert [(f.lineno, f.count) for f in report.findings] == [(mark("float64-line"), 3), (mark("second-line"), 1)]
    assert len(report) == 2 and report.codes() == {"TS103"}


def test_action_warn_one_warning_per_finding_and_location(mark):
    model = nn.Linear(4, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torchlint.sanitize(summary=False, training_checks=False) as report:
            feed_float64(model, times=4)
    ours = [w for w in caught if issubclass(w.category, torchlint.SanitizerWarning)]
    assert len(ours) == 1 and report.findings[0].count == 4
    assert ours[0].message.finding is report.findings[0]
    assert (ours[0].filename, ours[0].lineno) == (__file__, mark("float64-line"))
    assert str(ours[0].message).startswith("TS103 dtype-mismatch: argument 0 of model (Linear)")


def test_action_raise_stops_at_the_first_finding(mark):
    model = nn.Linear(4, 2)
    with pytest.raises(torchlint.SanitizerError) as info:
        with torchlint.sanitize(action="raise", summary=False, training_checks=False):
            model(torch.randn(2, 4, dtype=torch.float64))  # raise-line
            pytest.fail("not reached")
    assert info.value.finding.code == "TS103" and info.value.finding.lineno == mark("raise-line")
    assert str(info.value).startswith(f"{__file__}:{mark('raise-line')}: TS103 dtype-mismatch:")


def test_action_record_only_collects(recwarn):
    model = nn.Linear(4, 2)
    with torchlint.sanitize(action="record", summary=False, training_checks=False) as report:
        feed_float64(model)
    assert report.codes() == {"TS103"}
    assert not [w for w in recwarn if issubclass(w.category, torchlint.SanitizerWarning)]


def test_summary_table_on_stderr(capsys, mark):
    model = nn.Linear(4, 2)
    with torchlint.sanitize(action="record", training_checks=False):
        feed_float64(model, times=2)
    err = capsys.readouterr().err
    assert "torchlint.sanitize: 1 finding" in err
    row = next(line for line in err.splitlines() if line.strip().startswith("TS103"))
    assert row.split()[:3] == ["TS103", "dtype-mismatch", "2"]
    assert row.split()[3] == f"{__file__}:{mark('float64-line')}"
    assert "\x1b[" not in err  # no colour codes when stderr is not a terminal

    with torchlint.sanitize(action="record", training_checks=False):
        pass
    assert capsys.readouterr().err.strip() == "torchlint.sanitize: no findings"
    with torchlint.sanitize(action="record", summary=False, training_checks=False):
        feed_float64(model)
    assert capsys.readouterr().err == ""


def test_json_report_at_exit(tmp_path, mark):
    path = tmp_path / "findings.json"
    model = nn.Linear(4, 2)
    with torchlint.sanitize(action="record", summary=False, report=str(path), training_checks=False):
        feed_float64(model, times=2)
    data = json.loads(path.read_text())
    (finding,) = data["findings"]
    assert finding["code"] == "TS103" and finding["name"] == "dtype-mismatch" and finding["count"] == 2
    assert finding["filename"] == __file__ and finding["lineno"] == mark("float64-line")
    assert finding["details"]["input_dtype"] == "torch.float64"


def test_unwritable_report_path_is_reported_not_raised(tmp_path, capsys):
    path = tmp_path / "missing-dir" / "findings.json"
    with torchlint.sanitize(summary=False, report=str(path)):
        pass
    assert "cannot write the report" in capsys.readouterr().err and not path.exists()


def test_decorator_runs_each_call_in_a_fresh_session(quiet):
    session = torchlint.sanitize(**quiet)
    model = nn.Linear(4, 2)

    @session
    def validate(dtype):
        assert torch.is_anomaly_enabled()
        try:
            model(torch.randn(2, 4, dtype=dtype))
        except RuntimeError:
            pass
        return "done"

    assert validate(torch.float64) == "done"
    assert session.report.codes() == {"TS103"}
    assert validate(torch.float32) == "done"
    assert session.report.findings == []  # the second call's own report
    assert not torch.is_anomaly_enabled()


def test_invalid_options_are_rejected():
    with pytest.raises(ValueError, match="action='loud'"):
        torchlint.sanitize(action="loud")
    with pytest.raises(ValueError, match="inplace='sometimes'"):
        torchlint.sanitize(inplace="sometimes")
    with pytest.raises(TypeError, match="unexpected keyword argument.*anomally"):
        torchlint.sanitize(anomally=False)


def test_training_options_are_passed_through():
    session = torchlint.sanitize(update_window=5, grad_explosion_factor=50.0, stall_backwards=7, training_checks=False)
    assert (session.options.update_window, session.options.grad_explosion_factor) == (5, 50.0)
    assert session.options.stall_backwards == 7 and session.options.training_checks is False


class EventLog(Check):
    """A plug-in check that records every event it is given and reports TS199."""

    codes = {"TS199": "test-event"}
    option_defaults = {"log_limit": 100}

    def install(self):
        self.events = []

    def on_root_pre(self, module, args):
        self.events.append(("root_pre", self.session.module_name(module)))

    def on_module_pre(self, module, args):
        self.events.append(("module_pre", self.session.module_name(module)))

    def on_root_post(self, module, args, kwargs, output):
        self.events.append(("root_post", type(output).__name__))

    def on_loss_post(self, fn_name, input, target, loss):
        self.events.append(("loss", fn_name))

    def on_backward(self, event):
        self.events.append(("backward", event.kind, event.location.lineno))

    def around_backward(self, call, event):
        self.events.append(("around", len(event.tensors)))
        return call()

    def on_optimizer_pre_step(self, optimizer, args, kwargs):
        self.events.append(("step", self.session.in_optimizer_step))
        self.emit("TS199", f"stepped (limit {self.options.log_limit})")

    def finish(self):
        self.events.append(("finish",))


def test_plugin_check_receives_events_and_reports(mark):
    from torchlint.sanitizer.core import SanitizerOptions, Session

    model = nn.Sequential(nn.Linear(4, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    session = Session(SanitizerOptions(action="record", summary=False, extra={"log_limit": 9}), [EventLog])
    with session as report:
        check = session.checks[0]
        loss = F.cross_entropy(model(torch.randn(2, 4)), torch.tensor([0, 2]))
        loss.backward()  # plugin-backward
        optimizer.step()  # plugin-step
    assert check.events == [
        ("root_pre", "model"),
        ("module_pre", "model"),
        ("module_pre", "model.0"),
        ("root_post", "Tensor"),
        ("loss", "cross_entropy"),
        ("backward", "backward", mark("plugin-backward")),
        ("around", 1),
        ("step", 1),
        ("finish",),
    ]
    (finding,) = report.findings
    assert (finding.code, finding.name, finding.lineno) == ("TS199", "test-event", mark("plugin-step"))
    assert finding.message == "stepped (limit 9)"


def test_plugin_options_are_accepted_by_sanitize_once_registered():
    from torchlint.sanitizer.core import _registered_checks, register_check

    register_check(EventLog)
    try:
        session = torchlint.sanitize(log_limit=3, summary=False)
        assert session.options.log_limit == 3
    finally:
        _registered_checks.remove(EventLog)
    with pytest.raises(TypeError):
        torchlint.sanitize(log_limit=3)


class Broken(Check):
    codes = {"TS198": "broken"}

    def install(self):
        self.calls = 0

    def on_module_pre(self, module, args):
        self.calls += 1
        raise KeyError("bug in a check")


def test_a_failing_check_is_switched_off_not_the_training(monkeypatch):
    from torchlint.sanitizer.core import SanitizerOptions, Session

    monkeypatch.delenv("TORCHLINT_SANITIZER_STRICT")
    model = nn.Linear(4, 2)
    session = Session(SanitizerOptions(action="record", summary=False), [Broken])
    with pytest.warns(RuntimeWarning, match="internal error in the sanitizer's Broken"):
        with session as report:
            check = session.checks[0]
            for _ in range(3):
                model(torch.randn(2, 4))
    assert check.calls == 1
    assert report.findings == [] and "Broken" in report.notes[0]


def test_strict_mode_raises_internal_errors():
    from torchlint.sanitizer.core import SanitizerOptions, Session

    with pytest.raises(KeyError, match="bug in a check"):
        with Session(SanitizerOptions(action="record", summary=False), [Broken]):
            nn.Linear(4, 2)(torch.randn(2, 4))


class BrokenInstall(Check):
    def install(self):
        raise ValueError("cannot install")


def test_a_check_that_fails_to_install_is_skipped(monkeypatch, global_state):
    from torchlint.sanitizer.core import SanitizerOptions, Session, _shared_hooks

    monkeypatch.delenv("TORCHLINT_SANITIZER_STRICT")
    before = global_state()
    session = Session(SanitizerOptions(action="record", summary=False), [BrokenInstall, EventLog])
    with pytest.warns(RuntimeWarning, match="installing the sanitizer's BrokenInstall"):
        with session as report:
            assert [type(c) for c in session.checks] == [EventLog]
            nn.Linear(4, 2)(torch.randn(1, 4))
    assert "BrokenInstall" in report.notes[0]
    assert _shared_hooks.users == 0 and global_state() == before
