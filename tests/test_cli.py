"""The `torchlint` command: options, subcommands, exit statuses, colours, stdin, processes."""

import json
import os
import subprocess
import sys
import types

import pytest
from cli_helpers import BUGGY, CLEAN, LOOP, assert_one_line_error, run_cli, write

import torchlint
from torchlint.engine.rule import all_rules

ANSI = "\x1b["


@pytest.fixture(autouse=True)
def _plain_env(monkeypatch, tmp_path):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.chdir(tmp_path)


def test_text_report_shows_location_rule_source_line_caret_and_summary(tmp_path):
    write(tmp_path / "train.py", BUGGY)
    run = run_cli(["train.py", "--select", "TL016"])
    assert run.code == 1
    lines = run.out.splitlines()
    assert lines[0].startswith("train.py:5:9: TL016 [backward-under-no-grad] `loss.backward()` runs under")
    assert lines[1] == "    5 |         loss.backward()"
    # The caret run starts under column 9 and covers the 15 characters of the call.
    assert lines[2] == "      |         " + "^" * 15
    assert lines[-1] == "1 finding in 1 file (1 error, 0 warnings; 1 file checked)"
    assert run.err == ""


def test_clean_file_exits_zero_with_a_clean_message(tmp_path):
    write(tmp_path / "eval.py", CLEAN)
    run = run_cli(["eval.py"])
    assert run.code == 0
    assert run.out == "No findings (1 file checked)\n"


def test_default_path_is_the_current_directory(tmp_path):
    write(tmp_path / "pkg" / "train.py", BUGGY)
    run = run_cli(["--select", "TL016", "-q"])
    assert run.code == 1
    assert run.out.startswith(os.path.join("pkg", "train.py") + ":5:9: TL016")


def test_exit_zero_keeps_the_report_but_succeeds(tmp_path):
    write(tmp_path / "train.py", BUGGY)
    run = run_cli(["train.py", "--select", "TL016", "--exit-zero"])
    assert run.code == 0
    assert "TL016" in run.out


def test_quiet_prints_only_finding_lines(tmp_path):
    write(tmp_path / "a.py", BUGGY)
    write(tmp_path / "b.py", BUGGY)
    run = run_cli([".", "--select", "TL016", "--quiet"])
    assert run.code == 1
    assert [line.split(":")[0] for line in run.out.splitlines()] == ["a.py", "b.py"]


def test_quiet_clean_run_prints_nothing(tmp_path):
    write(tmp_path / "a.py", CLEAN)
    run = run_cli(["a.py", "-q"])
    assert (run.code, run.out) == (0, "")


def test_statistics_counts_findings_per_rule(tmp_path):
    write(tmp_path / "a.py", BUGGY)
    write(tmp_path / "b.py", BUGGY)
    write(tmp_path / "c.py", "def broken(:\n")
    run = run_cli([".", "--select", "TL016", "--statistics", "-q"])
    stats = run.out.splitlines()[-2:]
    assert stats == ["2  TL016  backward-under-no-grad", "1  TL000  syntax-error"]


def test_statistics_with_json_keeps_stdout_parseable(tmp_path):
    write(tmp_path / "a.py", BUGGY)
    run = run_cli(["a.py", "--select", "TL016", "--statistics", "--format", "json"])
    assert len(json.loads(run.out)) == 1
    assert "1  TL016  backward-under-no-grad" in run.err


def test_output_file_receives_the_report(tmp_path):
    write(tmp_path / "a.py", BUGGY)
    run = run_cli(["a.py", "--select", "TL016", "--format", "json", "--output", "report.json"])
    assert run.code == 1 and run.out == ""
    data = json.loads((tmp_path / "report.json").read_text())
    assert [(f["line"], f["code"]) for f in data] == [(5, "TL016")]


def test_output_to_an_unwritable_place_is_a_usage_error(tmp_path):
    write(tmp_path / "a.py", BUGGY)
    (tmp_path / "out").mkdir()
    assert_one_line_error(run_cli(["a.py", "--output", "out"]), "--output", "out")


def test_select_accepts_prefixes_and_ignore_removes(tmp_path):
    write(tmp_path / "a.py", BUGGY)
    assert "TL016" in run_cli(["a.py", "--select", "TL01", "-q"]).out
    run = run_cli(["a.py", "--select", "TL016", "--ignore", "TL016"])
    assert run.code == 0 and "TL016" not in run.out
    # Lower case and spaces are accepted.
    assert run_cli(["a.py", "--select", "tl016, tl000", "-q"]).code == 1


@pytest.mark.parametrize(
    "args, words",
    [
        (["--select", "TL999"], ["--select", "TL999"]),
        (["--ignore", "TL0X"], ["--ignore", "TL0X"]),
        (["--select", "E501"], ["E501"]),
        (["--format", "xml"], ["--format", "xml"]),
        (["--jobs", "two"], ["--jobs", "two"]),
        (["--jobs", "-1"], ["--jobs"]),
        (["--max-file-size", "big"], ["--max-file-size"]),
        (["--frobnicate"], ["--frobnicate"]),
        (["missing.py"], ["path not found", "missing.py"]),
        (["--config", "nowhere.toml"], ["--config", "nowhere.toml"]),
        (["-", "a.py"], ["'-'"]),
        (["a.py", "--stdin-filename", "x.py"], ["--stdin-filename"]),
    ],
)
def test_usage_errors_exit_2_with_one_line_naming_the_culprit(tmp_path, args, words):
    write(tmp_path / "a.py", BUGGY)
    assert_one_line_error(run_cli(args), *words)


def test_a_missing_path_stops_before_linting_anything(tmp_path):
    write(tmp_path / "a.py", BUGGY)
    run = run_cli(["a.py", "missing.py"])
    assert_one_line_error(run, "missing.py")
    assert run.out == ""


def test_version():
    run = run_cli(["--version"])
    assert (run.code, run.out.strip()) == (0, f"torchlint {torchlint.__version__}")


def test_format_choices_match_the_reporters():
    from torchlint import cli
    from torchlint.engine import reporters

    assert cli.FORMATS == reporters.FORMATS == tuple(reporters.REPORTERS)


def test_help_mentions_every_option():
    run = run_cli(["--help"])
    assert run.code == 0
    for option in (
        "--select",
        "--ignore",
        "--format",
        "--output",
        "--exit-zero",
        "--config",
        "--no-color",
        "--jobs",
        "--quiet",
        "--statistics",
        "--stdin-filename",
        "--version",
    ):
        assert option in run.out


# ----- colour ----------------------------------------------------------------------------------


def test_colour_on_a_terminal(tmp_path):
    write(tmp_path / "a.py", BUGGY)
    run = run_cli(["a.py", "--select", "TL016"], tty=True)
    assert ANSI in run.out
    assert "TL016" in run.out


@pytest.mark.parametrize("how", ["flag", "env"])
def test_no_colour_on_request_even_on_a_terminal(tmp_path, monkeypatch, how):
    write(tmp_path / "a.py", BUGGY)
    args = ["a.py", "--select", "TL016"]
    if how == "flag":
        args.append("--no-color")
    else:
        monkeypatch.setenv("NO_COLOR", "1")
    run = run_cli(args, tty=True)
    assert ANSI not in run.out and "TL016" in run.out


def test_no_colour_when_piped_or_written_to_a_file(tmp_path):
    write(tmp_path / "a.py", BUGGY)
    assert ANSI not in run_cli(["a.py", "--select", "TL016"]).out
    run_cli(["a.py", "--select", "TL016", "--output", "r.txt"], tty=True)
    assert ANSI not in (tmp_path / "r.txt").read_text()


def test_force_color_when_piped(tmp_path, monkeypatch):
    write(tmp_path / "a.py", BUGGY)
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert ANSI in run_cli(["a.py", "--select", "TL016"]).out


# ----- standard input --------------------------------------------------------------------------


def test_stdin_is_linted_and_reported_under_the_given_name(tmp_path):
    run = run_cli(["-", "--stdin-filename", "src/train.py", "--select", "TL016", "-q"], stdin=BUGGY.encode())
    assert run.code == 1
    assert run.out.startswith("src/train.py:5:9: TL016")


def test_stdin_without_a_name(tmp_path):
    run = run_cli(["-", "--select", "TL016", "--format", "json"], stdin=BUGGY.encode())
    assert [f["path"] for f in json.loads(run.out)] == ["-"]
    assert run_cli(["-"], stdin=CLEAN.encode()).code == 0


def test_stdin_filename_alone_reads_stdin(tmp_path):
    run = run_cli(["--stdin-filename", "t.py", "-q", "--select", "TL016"], stdin=BUGGY.encode())
    assert run.out.startswith("t.py:5:9: TL016")


# ----- subcommands -----------------------------------------------------------------------------


def test_rules_prints_a_table_of_every_rule():
    run = run_cli(["rules"])
    assert run.code == 0
    lines = run.out.splitlines()
    assert lines[0].split() == ["CODE", "NAME", "SEVERITY", "SUMMARY"]
    rows = {line.split()[0]: line.split(None, 3) for line in lines[1:]}
    assert set(rows) == set(all_rules())
    for code, rule in all_rules().items():
        assert rows[code][1:] == [rule.name, rule.severity, rule.summary]


def test_explain_prints_the_full_docs_by_code_or_name_and_links_the_page():
    docs = all_rules()["TL016"].docs()
    link = "https://github.com/torchlint/torchlint/blob/main/docs/rules/TL016-backward-under-no-grad.md"
    expected = f"{docs}\nOnline: {link}\n"
    assert run_cli(["explain", "TL016"]).out == expected
    assert run_cli(["explain", "tl016"]).out == expected
    assert run_cli(["explain", "backward-under-no-grad"]).out == expected
    assert "## Use instead" in docs


def test_explain_errors():
    assert_one_line_error(run_cli(["explain", "TL999"]), "TL999")
    assert_one_line_error(run_cli(["explain"]), "explain")
    assert_one_line_error(run_cli(["rules", "extra"]), "extra")


def test_check_subcommand_lints_any_path_even_one_named_like_a_subcommand(tmp_path):
    for name in ("run", "rules", "explain", "check"):
        write(tmp_path / name, BUGGY)
    run = run_cli(["check", "--select", "TL016", "-q", "check", "explain", "rules", "run"])
    assert run.code == 1
    assert [line.split(":")[0] for line in run.out.splitlines()] == ["check", "explain", "rules", "run"]
    assert run.err == ""


def test_paths_and_options_may_be_mixed(tmp_path):
    write(tmp_path / "a.py", BUGGY)
    write(tmp_path / "b.py", BUGGY)
    run = run_cli(["check", "a.py", "-q", "b.py", "--select", "TL016"])
    assert [line.split(":")[0] for line in run.out.splitlines()] == ["a.py", "b.py"]


def test_check_without_paths_lints_the_current_directory(tmp_path):
    write(tmp_path / "pkg" / "train.py", BUGGY)
    run = run_cli(["check", "--select", "TL016", "-q"])
    assert run.out.startswith(os.path.join("pkg", "train.py") + ":5:9: TL016")


def test_plain_paths_still_lint_when_unambiguous(tmp_path):
    write(tmp_path / "train.py", BUGGY)
    assert run_cli(["train.py", "--select", "TL016", "-q"]).out.startswith("train.py:5:9: TL016")


def test_a_subcommand_name_that_is_also_a_path_runs_the_subcommand_and_says_how_to_lint_it(tmp_path):
    write(tmp_path / "rules" / "train.py", BUGGY)
    run = run_cli(["rules"])
    assert run.code == 0 and run.out.splitlines()[0].split() == ["CODE", "NAME", "SEVERITY", "SUMMARY"]
    assert run.err == (
        "torchlint: note: `rules` is read as the subcommand; to lint the path 'rules', use `torchlint check rules`\n"
    )
    assert run_cli(["check", "rules", "-q", "--select", "TL016"]).code == 1


def test_check_help_lists_the_lint_options():
    run = run_cli(["check", "--help"])
    assert run.code == 0 and "usage: torchlint check" in run.out and "--select" in run.out


def test_repeated_select_and_ignore_add_up(tmp_path):
    write(tmp_path / "train.py", BUGGY)
    write(tmp_path / "loop.py", LOOP)
    run = run_cli([".", "-q", "--select", "TL016", "--select", "TL004"])
    assert sorted(line.split()[1] for line in run.out.splitlines()) == ["TL004", "TL016"]
    run = run_cli([".", "-q", "--ignore", "TL016", "--ignore", "TL004"])
    assert "TL016" not in run.out and "TL004" not in run.out


def test_rule_names_work_wherever_codes_do(tmp_path):
    write(tmp_path / "train.py", BUGGY)
    run = run_cli(["train.py", "-q", "--select", "backward-under-no-grad"])
    assert run.out.startswith("train.py:5:9: TL016")
    assert run_cli(["train.py", "-q", "--select", "TL0", "--ignore", "Backward-Under-No-Grad"]).code == 0
    assert_one_line_error(run_cli(["train.py", "--select", "backward-under-nograd"]), "backward-under-nograd")


def test_extend_select_adds_to_select(tmp_path):
    write(tmp_path / "train.py", BUGGY)
    write(tmp_path / "loop.py", LOOP)
    run = run_cli([".", "-q", "--select", "TL004", "--extend-select", "TL016"])
    assert sorted(line.split()[1] for line in run.out.splitlines()) == ["TL004", "TL016"]


def test_suppressing_an_unknown_code_warns_with_the_place(tmp_path):
    write(tmp_path / "train.py", BUGGY.replace("loss.backward()", "loss.backward()  # torchlint: disable=TL999"))
    write(tmp_path / "other.py", "x = 1  # noqa: E501, TL0160\ny = 2  # noqa: E501\n")
    run = run_cli([".", "-q", "--select", "TL016"])
    assert run.code == 1 and "train.py:5:9: TL016" in run.out
    other, train = run.err.splitlines()
    assert other == (
        "torchlint: warning: other.py:1: `# noqa: E501, TL0160`: unknown rule code or prefix 'TL0160'"
        " (did you mean TL016?)"
    )
    assert train.startswith(
        "torchlint: warning: train.py:5: `# torchlint: disable=TL999`: unknown rule code or prefix 'TL999'"
    )


def test_disable_takes_rule_names(tmp_path):
    write(
        tmp_path / "train.py",
        BUGGY.replace("loss.backward()", "loss.backward()  # torchlint: disable=backward-under-no-grad"),
    )
    run = run_cli(["train.py", "--select", "TL016"])
    assert (run.code, run.err) == (0, "")


def test_run_is_dispatched_to_the_sanitizer_runner(monkeypatch):
    seen = []
    fake = types.ModuleType("torchlint.sanitizer.runner")
    fake.main = lambda argv: seen.append(argv) or 7
    monkeypatch.setitem(sys.modules, "torchlint.sanitizer.runner", fake)
    assert run_cli(["run", "train.py", "--epochs", "1"]).code == 7
    assert seen == [["train.py", "--epochs", "1"]]


# ----- processes ---------------------------------------------------------------------------------


def test_jobs_gives_the_same_report_in_the_same_order(tmp_path):
    for i in range(12):
        write(tmp_path / f"m{i:02}.py", BUGGY if i % 3 else CLEAN + "def broken(:\n" * (i % 2))
    one = run_cli([".", "--format", "json", "--jobs", "1"])
    two = run_cli([".", "--format", "json", "--jobs", "2"])
    auto = run_cli([".", "--format", "json", "--jobs", "0"])
    assert one.code == two.code == auto.code == 1
    assert json.loads(one.out) == json.loads(two.out) == json.loads(auto.out)
    assert len(json.loads(one.out)) >= 8


# ----- fresh processes ---------------------------------------------------------------------------


def _python(code, cwd):
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, env=env, timeout=60)


def test_linting_imports_neither_torch_nor_libcst_nor_the_sanitizer(tmp_path):
    write(tmp_path / "a.py", BUGGY)
    proc = _python(
        "import sys\n"
        "from torchlint.cli import main\n"
        "main(['-q', 'a.py'])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'libcst', 'numpy')"
        " or m.startswith('torchlint.sanitizer'))\n"
        "print('HEAVY', heavy)\n",
        tmp_path,
    )
    assert "HEAVY []" in proc.stdout, proc.stdout + proc.stderr


def test_python_dash_m_torchlint(tmp_path):
    write(tmp_path / "a.py", BUGGY)
    proc = subprocess.run(
        [sys.executable, "-m", "torchlint", "a.py", "--select", "TL016", "--no-color"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stdout.startswith("a.py:5:9: TL016")


def test_text_findings_are_printed_as_each_file_is_linted(tmp_path, monkeypatch):
    from torchlint.engine import runner

    write(tmp_path / "a.py", BUGGY)
    write(tmp_path / "b.py", BUGGY)
    seen_before = {}
    real_lint_file = runner.lint_file

    def spying_lint_file(path, *args):
        seen_before[path] = sys.stdout.getvalue()
        return real_lint_file(path, *args)

    monkeypatch.setattr(runner, "lint_file", spying_lint_file)
    run = run_cli([".", "-q", "--select", "TL016"])
    assert seen_before["a.py"] == ""
    assert seen_before["b.py"].startswith("a.py:5:9: TL016")
    assert run.out.count("TL016") == 2
