"""`torchlint --fix`, `--unsafe-fixes`, `--diff`, `--show-fixes`, fixes on stdin, in JSON and SARIF,
the [*] marker, and the fix keys of [tool.torchlint]."""

import json
import subprocess
import sys
import textwrap

import pytest
from cli_helpers import assert_one_line_error, run_cli, write

from torchlint.engine.autofix import FixOptions, apply_edits, fix_text, make_edits
from torchlint.engine.finding import UNSAFE, Finding, Fix
from torchlint.engine.lint import lint_text

# TL008 (safe fix) on line 5.
VIEW = textwrap.dedent(
    """\
    import torch
    def flatten(conv, x):
        feat = conv(x)
        n, c, h, w = feat.shape
        return feat.permute(0, 2, 3, 1).view(n, h, w * c)
    """
)
VIEW_FIXED = VIEW.replace(".view(n,", ".reshape(n,")

# TL004 (unsafe fix: hoist the optimizer) on line 4.
REBUILT = textwrap.dedent(
    """\
    import torch
    def train(model, loader, epochs):
        for epoch in range(epochs):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            for x, y in loader:
                optimizer.zero_grad()
                model(x).sub(y).pow(2).mean().backward()
                optimizer.step()
    """
)


@pytest.fixture(autouse=True)
def _plain_env(monkeypatch, tmp_path):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.chdir(tmp_path)


def test_text_marks_fixable_findings_and_says_how_to_fix_them(tmp_path):
    write(tmp_path / "a.py", VIEW)
    write(tmp_path / "b.py", REBUILT)
    run = run_cli([".", "--select", "TL008,TL004"])
    assert run.code == 1
    assert "a.py:5:12: TL008 [*] [view-after-permute]" in run.out
    assert "b.py:4:21: TL004 [optimizer-in-loop]" in run.out  # unsafe: no mark without --unsafe-fixes
    assert run.out.rstrip().endswith("[*] 1 fixable with `torchlint --fix` (1 more with `--unsafe-fixes`)")


def test_fix_writes_the_file_and_exits_zero_when_nothing_is_left(tmp_path):
    write(tmp_path / "a.py", VIEW)
    run = run_cli(["a.py", "--fix"])
    assert (tmp_path / "a.py").read_text() == VIEW_FIXED
    assert run.code == 0
    assert "Fixed 1 finding in 1 file." in run.out
    assert run.out.rstrip().endswith("No findings (1 file checked)")
    assert run_cli(["a.py", "--fix"]).out.strip() == "No findings (1 file checked)"


def test_fix_leaves_unsafe_fixes_alone_and_exits_one_for_what_is_left(tmp_path):
    write(tmp_path / "b.py", REBUILT)
    run = run_cli(["b.py", "--fix", "--select", "TL004"])
    assert run.code == 1
    assert (tmp_path / "b.py").read_text() == REBUILT
    assert "1 finding left in 1 file" in run.out
    assert "1 fix available with `--fix --unsafe-fixes`" in run.out
    run = run_cli(["b.py", "--fix", "--unsafe-fixes", "--select", "TL004", "--show-fixes"])
    assert run.code == 0
    assert "Fixed 1 finding in 1 file.\n  b.py:\n    1 x TL004\n" in run.out
    fixed = (tmp_path / "b.py").read_text()
    assert fixed.index("optimizer = torch.optim.SGD") < fixed.index("for epoch in range(epochs):")


def test_diff_prints_what_fix_would_change_and_writes_nothing(tmp_path):
    write(tmp_path / "a.py", VIEW)
    run = run_cli(["a.py", "--diff"])
    assert run.code == 1
    assert (tmp_path / "a.py").read_text() == VIEW
    assert run.out.splitlines()[:2] == ["--- a/a.py", "+++ b/a.py"]
    assert "-    return feat.permute(0, 2, 3, 1).view(n, h, w * c)" in run.out
    assert "+    return feat.permute(0, 2, 3, 1).reshape(n, h, w * c)" in run.out
    assert run.err == "Would fix 1 finding in 1 file.\n"
    write(tmp_path / "a.py", VIEW_FIXED)
    clean = run_cli(["a.py", "--diff"])
    assert (clean.code, clean.out, clean.err) == (0, "", "No fixes to apply.\n")


def test_diff_cannot_be_combined_with_a_machine_format(tmp_path):
    write(tmp_path / "a.py", VIEW)
    assert_one_line_error(run_cli(["a.py", "--diff", "--format", "json"]), "--diff")


def test_fix_on_stdin_prints_the_fixed_source_and_reports_on_stderr(tmp_path):
    run = run_cli(["-", "--fix", "--stdin-filename", "a.py"], stdin=VIEW.encode())
    assert run.out == VIEW_FIXED
    assert run.code == 0
    assert "Fixed 1 finding in 1 file." in run.err
    assert not (tmp_path / "a.py").exists()


def test_json_carries_each_fix_with_applicability_and_edits_that_apply(tmp_path):
    write(tmp_path / "a.py", VIEW)
    write(tmp_path / "b.py", REBUILT)
    data = json.loads(run_cli([".", "--format", "json", "--select", "TL008,TL004"]).out)
    fixes = {d["code"]: d["fix"] for d in data}
    assert fixes["TL008"] == {
        "description": "Use `.reshape(...)`",
        "applicability": "safe",
        "edits": [{"line": 5, "column": 37, "end_line": 5, "end_column": 41, "text": "reshape"}],
    }
    assert fixes["TL004"]["applicability"] == "unsafe"
    from torchlint.engine.finding import Edit

    assert apply_edits(VIEW, [Edit(**e) for e in fixes["TL008"]["edits"]]) == VIEW_FIXED


def test_sarif_results_carry_fixes(tmp_path):
    write(tmp_path / "a.py", VIEW)
    result = json.loads(run_cli(["a.py", "--format", "sarif"]).out)["runs"][0]["results"][0]
    (fix,) = result["fixes"]
    assert fix["description"]["text"] == "Use `.reshape(...)`"
    (change,) = fix["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "a.py"
    assert change["replacements"] == [
        {
            "deletedRegion": {"startLine": 5, "startColumn": 37, "endLine": 5, "endColumn": 41},
            "insertedContent": {"text": "reshape"},
        }
    ]


def test_config_fix_keys(tmp_path):
    write(tmp_path / "a.py", VIEW)
    write(tmp_path / "b.py", REBUILT)
    write(tmp_path / "pyproject.toml", '[tool.torchlint]\nfix = true\nunsafe-fixes = true\nunfixable = ["TL008"]\n')
    run = run_cli([".", "--select", "TL008,TL004"])
    assert (tmp_path / "a.py").read_text() == VIEW  # unfixable
    assert (tmp_path / "b.py").read_text() != REBUILT  # fix and unsafe-fixes from the config
    assert run.code == 1 and "Fixed 1 finding in 1 file." in run.out
    write(tmp_path / "pyproject.toml", '[tool.torchlint]\nfix = true\nfixable = ["TL01"]\n')
    run_cli([".", "--select", "TL008"])
    assert (tmp_path / "a.py").read_text() == VIEW  # TL008 is not under TL01
    assert run_cli([".", "--no-fix", "--select", "TL008"]).code == 1


@pytest.mark.parametrize(
    "table,key",
    [("fix = 'yes'", "fix"), ("unsafe-fixes = 1", "unsafe-fixes"), ("unfixable = ['TL999']", "unfixable")],
)
def test_bad_fix_keys_are_one_line_errors(tmp_path, table, key):
    write(tmp_path / "a.py", VIEW)
    write(tmp_path / "pyproject.toml", f"[tool.torchlint]\n{table}\n")
    assert_one_line_error(run_cli(["a.py"]), key)


def test_fixed_file_keeps_its_line_endings_and_encoding(tmp_path):
    source = "# -*- coding: latin-1 -*-\n# caf\xe9\n" + VIEW
    (tmp_path / "a.py").write_bytes(source.replace("\n", "\r\n").encode("latin-1"))
    run_cli(["a.py", "--fix"])
    data = (tmp_path / "a.py").read_bytes()
    assert data == ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + VIEW_FIXED).replace("\n", "\r\n").encode("latin-1")


def test_fix_with_jobs_fixes_every_file(tmp_path):
    for i in range(10):
        write(tmp_path / f"m{i}.py", VIEW)
    run = run_cli([".", "--fix", "--jobs", "2"])
    assert run.code == 0 and "Fixed 10 findings in 10 files." in run.out
    assert all((tmp_path / f"m{i}.py").read_text() == VIEW_FIXED for i in range(10))


def test_fixes_that_overlap_settle_in_rounds():
    """TL019's fix moves the script into main(), over TL001's insertion point: TL001 is fixed in
    the next round, on the moved code."""
    source = textwrap.dedent(
        """\
        import torch
        from torch.utils.data import DataLoader
        model = torch.nn.Linear(1, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in DataLoader(torch.randn(8, 1), num_workers=2):
            model(x).sum().backward()
            opt.step()
        """
    )
    outcome = fix_text(source, "s.py", lambda text, wanted: lint_text(text, "s.py", edits=wanted), FixOptions(True))
    assert dict(outcome.fixed) == {"TL019": 1, "TL001": 1}
    assert outcome.result.findings == []
    assert "    for x in DataLoader(torch.randn(8, 1), num_workers=2):\n        opt.zero_grad()\n" in outcome.text


def test_a_fix_that_would_break_the_file_is_skipped_and_said_so():
    source = "import torch\nx = torch.ones(3)\n"
    lint = lint_text(source, "s.py")
    import ast

    from torchlint.analysis.context import FileContext

    ctx = FileContext("s.py", source, ast.parse(source))
    stmt = ctx.tree.body[1]
    broken = Finding(
        "s.py",
        2,
        1,
        2,
        5,
        "TL008",
        "view-after-permute",
        "error",
        "m",
        Fix("d", build=lambda e: e.insert_before(stmt, "return 1")),
    )
    fine = Finding(
        "s.py",
        2,
        1,
        2,
        5,
        "TL008",
        "view-after-permute",
        "error",
        "m",
        Fix("d", applicability=UNSAFE, build=lambda e: e.insert_before(stmt, "y = 1")),
    )
    out, problems = make_edits(ctx, [broken, fine], lambda f: True)
    assert out[0].fix is None and out[1].fix.edits
    assert problems == [
        "s.py:2: TL008 fix skipped: the fixed file would not compile ('return' outside function (s.py, line 2))"
    ]
    assert lint.findings == []


def test_plain_lint_with_fixable_findings_imports_no_libcst(tmp_path):
    write(tmp_path / "a.py", VIEW)
    code = "import sys\nfrom torchlint.cli import main\nrc = main(['a.py'])\nprint(rc, 'libcst' in sys.modules)\n"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert run.stdout.strip().endswith("1 False"), run.stdout + run.stderr


def test_diff_applies_with_git_apply(tmp_path):
    write(tmp_path / "a.py", VIEW)
    diff = run_cli(["a.py", "--diff"]).out
    (tmp_path / "fix.patch").write_text(diff)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "apply", "fix.patch"], cwd=tmp_path, check=True)
    assert (tmp_path / "a.py").read_text() == VIEW_FIXED


def test_fix_on_excluded_stdin_gives_the_source_back_unchanged(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.torchlint]\nextend-exclude = ["gen"]\n')
    run = subprocess.run(
        [sys.executable, "-m", "torchlint", "--fix", "-", "--stdin-filename", "gen/a.py"],
        input=VIEW.encode(),
        capture_output=True,
        cwd=tmp_path,
    )
    assert (run.returncode, run.stdout) == (0, VIEW.encode())
