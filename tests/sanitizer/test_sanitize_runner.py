"""``torchlint run``: torchlint.sanitizer.runner.main(argv) and ``python -m``."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")

from torchlint.sanitizer import SanitizerWarning
from torchlint.sanitizer.runner import main

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import torch
    import torch.fx.traceback

    def record(**facts):
        with open(sys.argv[1], "w") as fh:
            json.dump(facts, fh)

    if __name__ == "__main__":
        record(
            argv=sys.argv[2:],
            name=__name__,
            anomaly=torch.is_anomaly_enabled(),
            stacks=torch.fx.traceback.format_stack.__module__,
            frames=len(torch.ones(1, requires_grad=True).mul(2).grad_fn.metadata.get("traceback_", [])),
            modes=torch._C._len_torch_function_stack(),
        )
        model = torch.nn.Linear(3, 2)
        if "float64" in sys.argv:
            try:
                model(torch.randn(2, 3, dtype=torch.float64))  # float64-line
            except RuntimeError:
                pass
        if "crash" in sys.argv:
            raise KeyError("boom")
        if "exit" in sys.argv:
            sys.exit(int(sys.argv[-1]))
    """
)


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    return path


def facts(tmp_path):
    return json.loads((tmp_path / "facts.json").read_text())


def test_runs_the_script_as_main_with_its_arguments(script, tmp_path, capsys):
    argv_before = sys.argv[:]
    assert main([str(script), str(tmp_path / "facts.json"), "--epochs", "3", "-v"]) == 0
    seen = facts(tmp_path)
    assert seen["argv"] == ["--epochs", "3", "-v"] and seen["name"] == "__main__"
    assert seen["anomaly"] is True and seen["modes"] == 0
    assert sys.argv == argv_before
    assert "torchlint.sanitize: no findings" in capsys.readouterr().err


@pytest.mark.parametrize(
    "flags,anomaly,frames",
    [
        ([], True, 1),  # auto: anomaly mode recording the user's line only
        (["--anomaly", "auto"], True, 1),
        (["--anomaly", "full"], True, "many"),  # torch's full stack
        (["--anomaly", "off"], False, 0),
        (["--no-anomaly"], False, 0),
    ],
)
def test_the_anomaly_flag(flags, anomaly, frames, script, tmp_path):
    assert main([*flags, str(script), str(tmp_path / "facts.json")]) == 0
    seen = facts(tmp_path)
    assert seen["anomaly"] is anomaly
    assert seen["frames"] > 3 if frames == "many" else seen["frames"] == frames
    assert seen["stacks"] == "torch.fx.traceback" or anomaly  # torch's own function back when off


def test_a_bad_anomaly_flag_is_a_usage_error(capsys):
    assert main(["--anomaly", "sometimes", "x.py"]) == 2
    assert "invalid choice: 'sometimes'" in capsys.readouterr().err


def test_exit_status_is_the_scripts_own(script, tmp_path, capsys):
    out = str(tmp_path / "facts.json")
    assert main([str(script), out, "exit", "7"]) == 7
    assert main([str(script), out, "exit", "0"]) == 0
    assert main([str(script), out, "crash"]) == 1
    err = capsys.readouterr().err
    assert "KeyError: 'boom'" in err and "runpy" not in err  # the script's traceback, from its own frame


def test_usage_errors_exit_2(tmp_path, capsys):
    assert main([]) == 2
    assert capsys.readouterr().err.endswith("error: the following arguments are required: SCRIPT\n")
    assert main(["--inplace", "sometimes", "x.py"]) == 2
    assert main([str(tmp_path / "missing.py")]) == 2
    assert "no such script" in capsys.readouterr().err
    assert main(["--help"]) == 0


def test_options_reach_the_session(script, tmp_path, capsys):
    report = tmp_path / "report.json"
    out = str(tmp_path / "facts.json")
    with pytest.warns(SanitizerWarning, match="TS103"):
        status = main(["--no-anomaly", "--inplace", "always", "--report", str(report), str(script), out, "float64"])
    assert status == 0
    seen = facts(tmp_path)
    assert seen["anomaly"] is False and seen["modes"] == 1
    (finding,) = json.loads(report.read_text())["findings"]
    line = next(i for i, text in enumerate(SCRIPT.splitlines(), 1) if text.endswith("# float64-line"))
    assert (finding["code"], finding["filename"], finding["lineno"]) == ("TS103", str(script), line)
    assert "TS103" in capsys.readouterr().err


def test_raise_stops_the_script_with_status_1(script, tmp_path, capsys):
    assert main(["--raise", str(script), str(tmp_path / "facts.json"), "float64"]) == 1
    assert "SanitizerError" in capsys.readouterr().err


def test_python_dash_m_entry_point(script, tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchlint.sanitizer.runner",
            "--no-anomaly",
            str(script),
            str(tmp_path / "f.json"),
            "exit",
            "4",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 4, result.stderr
    assert json.loads((tmp_path / "f.json").read_text())["argv"] == ["exit", "4"]


def test_torchlint_cli_dispatches_run(script, tmp_path):
    from torchlint.cli import main as cli_main

    assert cli_main(["run", "--no-anomaly", str(script), str(tmp_path / "facts.json"), "exit", "5"]) == 5
    assert facts(tmp_path)["anomaly"] is False


def test_a_directory_runs_its_main_module_or_is_refused_as_python_would(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    assert main(["pkg"]) == 2
    err = capsys.readouterr().err
    assert err == "torchlint run: error: pkg is a directory without a __main__.py; name the script to run\n"
    (tmp_path / "pkg" / "__main__.py").write_text("import sys\nsys.exit(6)\n")
    assert main(["--no-anomaly", "pkg"]) == 6


def test_a_syntax_error_prints_pythons_own_report_and_exits_1(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "broken.py").write_text("import torch\nx = (1,\nprint(x\n")
    python = subprocess.run([sys.executable, "broken.py"], capture_output=True, text=True, timeout=60)
    assert main(["broken.py"]) == python.returncode == 1
    err = capsys.readouterr().err
    assert err == python.stderr  # no traceback through runpy or torchlint, no sanitizer summary
    assert "SyntaxError" in err and "Traceback" not in err


def test_file_and_finding_paths_are_absolute_as_under_python(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "where.py").write_text(
        "import json, sys, torch\n"
        "with open(sys.argv[1], 'w') as fh:\n"
        "    json.dump({'file': __file__, 'argv0': sys.argv[0]}, fh)\n"
        "torch.nn.Linear(3, 2)(torch.randn(2, 3, dtype=torch.float64))\n"
    )
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    python = subprocess.run([sys.executable, "where.py", "python.json"], capture_output=True, text=True, timeout=120)
    assert python.returncode == 1  # the float64 input is an error without the sanitizer too
    with pytest.warns(SanitizerWarning, match="TS103"):
        assert main(["--no-anomaly", "--report", "report.json", "where.py", "run.json"]) == 1
    assert json.loads((tmp_path / "run.json").read_text()) == json.loads((tmp_path / "python.json").read_text())
    assert json.loads((tmp_path / "run.json").read_text())["file"] == str(tmp_path / "where.py")
    (finding,) = json.loads((tmp_path / "report.json").read_text())["findings"]
    assert finding["filename"] == str(tmp_path / "where.py")
    capsys.readouterr()


def test_sigterm_publishes_the_report_then_dies_by_the_signal(script, tmp_path):
    """torchrun stops the surviving ranks with SIGTERM when one fails: what they
    found must still reach the summary and the report, and the exit status is
    the one the plain run would have had."""
    slow = tmp_path / "slow.py"
    slow.write_text(
        "import time, torch\n"
        "try:\n"
        "    torch.nn.Linear(3, 2)(torch.randn(2, 3, dtype=torch.float64))\n"
        "except RuntimeError:\n"
        "    pass\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    report = tmp_path / "report.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "torchlint", "run", "--no-anomaly", "--report", str(report), str(slow)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout.readline() == "ready\n"
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == -signal.SIGTERM
    assert [f["code"] for f in json.loads(report.read_text())["findings"]] == ["TS103"]
    assert "torchlint.sanitize: 1 finding" in err
