"""``pytest --torchlint-sanitize``: through the real pytest, in a subprocess, on
a test file that trains small models (one clean test, one with a NaN batch)."""

import importlib.metadata
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET

import pytest

pytest.importorskip("torch")

TESTS = textwrap.dedent(
    """
    import pytest
    import torch
    import torch.nn.functional as F


    def train(nan=False, steps=3):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(steps):
            x, y = torch.randn(8, 4), torch.randint(0, 2, (8,))
            if nan and step == steps - 1:
                x[0, 0] = float("nan")
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)  # FORWARD
            loss.backward()
            opt.step()
        return loss


    def test_clean_training():
        assert train().isfinite()


    def test_nan_batch():
        train(nan=True)


    @pytest.mark.torchlint_skip(reason="provokes a NaN on purpose")
    def test_opted_out():
        train(nan=True)


    @pytest.mark.torchlint(ignore="TS104,TS111", anomaly=False)
    def test_codes_ignored_by_marker():
        train(nan=True)


    @pytest.mark.torchlint(anomaly=False)
    def test_opted_in_by_marker():
        train(nan=True)


    @pytest.mark.torchlint(action="raise", anomaly=False)
    def test_stopped_at_the_first_finding():
        train(nan=True)


    def test_failing_on_its_own():
        train(nan=True)
        assert False, "the test's own failure"
    """
)

FORWARD_LINE = next(i for i, text in enumerate(TESTS.splitlines(), 1) if "# FORWARD" in text)


def run_pytest(tmp_path, *options):
    (tmp_path / "test_training.py").write_text(TESTS)
    xml = tmp_path / "results.xml"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", f"--junitxml={xml}", *options],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    outcomes = {}
    cases = ET.parse(xml).getroot().iter("testcase") if xml.exists() else ()  # none after a usage error
    for case in cases:
        failure = case.find("failure")
        outcomes[case.get("name")] = (
            ("failed", failure.get("message", "") + (failure.text or "")) if failure is not None else ("passed", "")
        )
    return result, outcomes


def test_the_plugin_is_registered_through_the_pytest11_entry_point():
    plugins = [e for e in importlib.metadata.entry_points(group="pytest11") if e.name == "torchlint"]
    assert [e.value for e in plugins] == ["torchlint.sanitizer.pytest_plugin"], "reinstall torchlint: pip install -e ."


def outcome_names(outcomes):
    return {name: outcome for name, (outcome, _) in outcomes.items()}


def test_without_the_option_only_marked_tests_are_sanitized(tmp_path):
    _, outcomes = run_pytest(tmp_path)
    assert outcome_names(outcomes) == {
        "test_clean_training": "passed",
        "test_nan_batch": "passed",
        "test_opted_out": "passed",
        "test_codes_ignored_by_marker": "passed",
        "test_opted_in_by_marker": "failed",
        "test_stopped_at_the_first_finding": "failed",
        "test_failing_on_its_own": "failed",
    }
    assert f"test_training.py:{FORWARD_LINE}: TS104" in outcomes["test_opted_in_by_marker"][1]
    assert re.search(
        rf"SanitizerError: \S*test_training.py:{FORWARD_LINE}: TS104", outcomes["test_stopped_at_the_first_finding"][1]
    )


def test_sanitize_fails_the_tests_with_findings(tmp_path):
    result, outcomes = run_pytest(tmp_path, "--torchlint-sanitize", "--torchlint-option", "anomaly=false")
    assert outcome_names(outcomes) == {
        "test_clean_training": "passed",
        "test_nan_batch": "failed",
        "test_opted_out": "passed",
        "test_codes_ignored_by_marker": "passed",
        "test_opted_in_by_marker": "failed",
        "test_stopped_at_the_first_finding": "failed",
        "test_failing_on_its_own": "failed",
    }
    message = outcomes["test_nan_batch"][1]
    assert "torchlint.sanitize: 2 findings in this test" in message
    assert f"test_training.py:{FORWARD_LINE}: TS104 nonfinite-input" in message
    assert "TS111 nonfinite-grad" in message
    # A test that fails on its own keeps its own error; the findings are shown beside it.
    assert "the test's own failure" in outcomes["test_failing_on_its_own"][1]
    assert "Captured torchlint call" in result.stdout
    assert re.search(r"=+ torchlint.sanitize =+", result.stdout)
    assert "test_training.py::test_nan_batch: 2 findings (TS104, TS111)" in result.stdout


def test_warn_action_with_selected_codes_reports_without_failing(tmp_path):
    result, outcomes = run_pytest(
        tmp_path,
        "--torchlint-sanitize",
        "--torchlint-action=warn",
        "--torchlint-select=TS111",
        "--torchlint-option=anomaly=false",
    )
    assert outcomes["test_nan_batch"] == ("passed", "")
    assert "SanitizerWarning: TS111 nonfinite-grad" in result.stdout
    assert "SanitizerWarning: TS104" not in result.stdout  # not selected
    assert "test_training.py::test_nan_batch: 1 finding (TS111)" in result.stdout


def test_bad_options_are_usage_errors(tmp_path):
    result, _ = run_pytest(tmp_path, "--torchlint-sanitize", "--torchlint-option", "no_such_option=1")
    assert result.returncode == 4 and "no_such_option" in result.stderr
