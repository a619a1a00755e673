"""The result cache: reused only while the file, the settings, torchlint and the files it
depends on are unchanged; never corrupt, never a crash."""

import json
import os
import pathlib
import subprocess
import sys

import pytest
from cli_helpers import BUGGY, CLEAN, LOOP, run_cli, write
from notebook_helpers import markdown, write_notebook

from torchlint.engine import cache as cache_mod
from torchlint.engine import config, runner
from torchlint.engine.finding import Edit, Finding, Fix


@pytest.fixture(autouse=True)
def _in_tmp(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    for name in ("FORCE_COLOR", "TORCHLINT_NO_CACHE", "TORCHLINT_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    config.clear_cache()


@pytest.fixture
def linted(monkeypatch):
    """The paths each run really linted (not taken from the cache)."""
    seen = []
    real = runner.lint_file

    def counting(path, *args):
        seen.append(path)
        return real(path, *args)

    monkeypatch.setattr(runner, "lint_file", counting)
    return seen


def lint(*args):
    run = run_cli(["check", *args])
    assert run.code in (0, 1), run.err
    return run


def entries(folder=".torchlint_cache"):
    return sorted(pathlib.Path(folder).rglob("*.json"))


def project(tmp_path):
    write(tmp_path / "a.py", BUGGY)
    write(tmp_path / "b.py", LOOP)
    write(tmp_path / "c.py", CLEAN)


def test_an_unchanged_tree_is_not_linted_again_and_reports_the_same(tmp_path, linted):
    project(tmp_path)
    first = lint(".")
    assert sorted(linted) == ["a.py", "b.py", "c.py"] and len(entries()) == 3
    linted.clear()
    second = lint(".")
    assert linted == []
    assert (second.code, second.out, second.err) == (first.code, first.out, first.err)
    assert "a.py:5:9: TL016" in second.out and "= help:" in second.out  # source lines and details kept


def test_editing_a_file_lints_only_that_file(tmp_path, linted):
    project(tmp_path)
    lint(".")
    linted.clear()
    write(tmp_path / "c.py", BUGGY)
    run = lint(".", "-q")
    assert linted == ["c.py"]
    assert "c.py:5:9: TL016" in run.out
    # Only the content counts: the same bytes again, with a new modification time, are a hit.
    linted.clear()
    os.utime(tmp_path / "c.py", (1, 1))
    lint(".")
    assert linted == []


def test_changed_settings_miss(tmp_path, linted):
    """The key holds the rules in force for the file, after per-file-ignores."""
    project(tmp_path)
    lint(".")
    linted.clear()
    write(tmp_path / "pyproject.toml", '[tool.torchlint]\n[tool.torchlint.per-file-ignores]\n"a.py" = ["TL016"]\n')
    config.clear_cache()
    assert "TL016" not in lint(".", "-q").out
    assert linted == ["a.py"]  # per-file-ignores changed a.py's rules only
    linted.clear()
    assert "TL004" not in lint(".", "-q", "--ignore", "TL016,TL004").out
    assert sorted(linted) == ["a.py", "b.py", "c.py"]


def test_a_new_torchlint_misses(tmp_path, linted, monkeypatch):
    project(tmp_path)
    lint(".")
    linted.clear()
    monkeypatch.setattr(cache_mod, "linter_fingerprint", lambda: "another version")
    lint(".")
    assert sorted(linted) == ["a.py", "b.py", "c.py"]


def test_a_changed_dependency_invalidates_its_dependents(tmp_path, linted, monkeypatch):
    """Cross-file summaries: a result records the files it consulted; when one changes, or
    appears, the dependents are linted again."""
    project(tmp_path)
    write(tmp_path / "helpers.py", "def step(opt):\n    opt.step()\n")
    real = runner.lint_file

    def with_dependencies(path, *args):
        result = real(path, *args)
        if path == "a.py":
            result.dependencies = ("helpers.py", "missing.py")
        return result

    monkeypatch.setattr(runner, "lint_file", with_dependencies)
    lint("a.py", "b.py")
    linted.clear()
    lint("a.py", "b.py")
    assert linted == []
    write(tmp_path / "helpers.py", "def step(opt):\n    opt.zero_grad()\n    opt.step()\n")
    lint("a.py", "b.py")
    assert linted == ["a.py"]
    linted.clear()
    write(tmp_path / "missing.py", "x = 1\n")
    lint("a.py", "b.py")
    assert linted == ["a.py"]


def test_no_cache_neither_reads_nor_writes(tmp_path, linted):
    project(tmp_path)
    lint(".", "--no-cache")
    lint(".", "--no-cache")
    assert len(linted) == 6 and not (tmp_path / ".torchlint_cache").exists()


def test_where_the_cache_lives(tmp_path, monkeypatch):
    project(tmp_path)
    write(tmp_path / "pyproject.toml", '[tool.torchlint]\ncache-dir = "build/lint-cache"\n')
    lint(".")
    assert len(entries("build/lint-cache")) == 3
    assert (tmp_path / "build" / "lint-cache" / ".gitignore").read_text().endswith("*\n")
    assert (tmp_path / "build" / "lint-cache" / "CACHEDIR.TAG").exists()
    lint(".", "--cache-dir", "elsewhere")
    assert len(entries("elsewhere")) == 3
    monkeypatch.setenv("TORCHLINT_CACHE_DIR", str(tmp_path / "from-env"))
    lint(".")
    assert len(entries("from-env")) == 3
    # In a subfolder, the project's cache (next to its pyproject.toml) is used.
    os.chdir(tmp_path / "build")
    monkeypatch.delenv("TORCHLINT_CACHE_DIR")
    config.clear_cache()
    write(tmp_path / "pyproject.toml", "[tool.torchlint]\n")
    lint("..")
    assert len(entries(str(tmp_path / ".torchlint_cache"))) == 3


@pytest.mark.parametrize(
    "damage", [b"", b"{", b"[]", b'{"key": 1}', b"\xff\xfe garbage", b'{"key": null, "result": 3}']
)
def test_a_broken_entry_is_a_miss_and_is_rewritten(tmp_path, linted, damage):
    project(tmp_path)
    expected = lint(".").out
    for entry in entries():
        with open(entry, "wb") as handle:
            handle.write(damage)
    linted.clear()
    run = lint(".")
    assert (run.out, run.err) == (expected, "")
    assert sorted(linted) == ["a.py", "b.py", "c.py"]
    linted.clear()
    lint(".")
    assert linted == []


def test_a_forged_entry_with_another_key_is_not_used(tmp_path, linted):
    project(tmp_path)
    lint(".")
    for entry in entries():
        data = json.loads(entry.read_text())
        data["result"]["findings"] = []
        data["key"] = "0" * 64
        with open(entry, "w") as handle:
            json.dump(data, handle)
    linted.clear()
    assert "TL016" in lint(".").out and len(linted) == 3


def test_an_unwritable_cache_folder_is_one_warning(tmp_path):
    project(tmp_path)
    write(tmp_path / "blocked", "a file where the cache folder should be\n")
    run = lint(".", "--cache-dir", "blocked")
    assert "a.py:5:9: TL016" in run.out
    assert run.err.startswith("torchlint: warning: cannot write the cache in blocked")
    assert run.err.count("\n") == 1


def test_a_rule_that_crashed_is_not_cached(tmp_path, linted, monkeypatch):
    from torchlint.engine.rule import all_rules

    project(tmp_path)
    monkeypatch.setattr(all_rules()["TL016"], "check", lambda self, ctx: 1 / 0)
    assert "TL016 crashed" in lint("a.py").err
    linted.clear()
    assert "TL016 crashed" in lint("a.py").err
    assert linted == ["a.py"]


def test_notebook_results_come_back_whole(tmp_path, linted):
    write_notebook(tmp_path / "nb.ipynb", markdown("# T"), "import torch", BUGGY)
    first = [lint("nb.ipynb", "--format", fmt).out for fmt in ("text", "json", "github", "sarif")]
    linted.clear()
    second = [lint("nb.ipynb", "--format", fmt).out for fmt in ("text", "json", "github", "sarif")]
    assert linted == [] and second == first
    assert "nb.ipynb:cell 3:5:9: TL016" in second[0]


def test_jobs_and_concurrent_runs_share_one_cache_safely(tmp_path):
    for i in range(24):
        write(tmp_path / f"m{i:02}.py", [BUGGY, LOOP, CLEAN][i % 3])
    command = [sys.executable, "-m", "torchlint", "check", "--jobs", "2", "--format", "json", "."]
    runs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outputs = [run.communicate(timeout=300) for run in runs]
    assert all(err == "" for _, err in outputs), outputs
    assert len({out for out, _ in outputs}) == 1
    assert len(entries()) == 24 and not [p for p in os.listdir(".torchlint_cache") if p.startswith(".tmp")]
    warm = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert warm.stdout == outputs[0][0]


def test_finding_round_trips_through_its_dict():
    fix = Fix("use reshape", (Edit(1, 2, 1, 6, "reshape"),))
    finding = Finding("a.py", 1, 2, 1, 6, "TL008", "view-after-permute", "error", "x\nwhy: y\nhelp: z", fix, cell=3)
    assert Finding.from_dict(finding.to_dict()) == finding
    assert Finding.from_dict(finding.to_dict()).fix == fix


def test_fixing_bypasses_the_cache_and_the_next_lint_sees_the_fixed_file(tmp_path, linted):
    write(
        tmp_path / "v.py",
        "import torch\ndef f(layer, x):\n    y = layer(x)\n    return y.permute(0, 2, 1).view(y.size(0), -1)\n",
    )
    assert "TL008 [*]" in lint("v.py", "-q").out  # the cached fix keeps its applicability
    assert "TL008 [*]" in lint("v.py", "-q").out
    assert linted == ["v.py"]
    lint("v.py", "--fix")  # fixes the file (fix_file, never a cached result)
    assert ".reshape(" in (tmp_path / "v.py").read_text()
    assert "TL008" not in lint("v.py", "-q").out
    assert linted == ["v.py", "v.py"]  # the fixed content is a miss
    json_run = lint("v.py", "--format", "json", "--select", "TL008")
    assert json.loads(json_run.out) == []


def test_the_fingerprint_follows_the_linters_own_files(tmp_path, monkeypatch):
    """An edited checkout (a rule, a fixer in a subfolder) never reuses stale results."""
    import torchlint

    package = pathlib.Path(torchlint.__file__).parent
    before = cache_mod.linter_fingerprint()
    fixer = next((package / "rules").rglob("*/*.py"), None) or next((package / "rules").glob("*.py"))
    info = fixer.stat()
    cache_mod.linter_fingerprint.cache_clear()
    try:
        os.utime(fixer, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000))
        assert cache_mod.linter_fingerprint() != before
    finally:
        os.utime(fixer, ns=(info.st_atime_ns, info.st_mtime_ns))
        cache_mod.linter_fingerprint.cache_clear()
    assert cache_mod.linter_fingerprint() == before


_SCORING = """\
import torch


def evaluate(model, loader):
    model.eval()
    return [model(x).argmax(1) for x, _ in loader]
"""
_NO_GRAD_CALLER = """\
import torch
from scoring import evaluate


def validate(model, loader):
    with torch.no_grad():
        return evaluate(model, loader)
"""
_GRAD_CALLER = """\
import scoring


def report(model, loader):
    return scoring.evaluate(model, loader)
"""


def test_a_new_file_that_calls_a_function_invalidates_its_cached_result(tmp_path, linted):
    """``evaluate`` is judged by its callers in other files (all under no-grad: no finding): a
    caller added later, in a file that did not exist, must be seen on the next cached run."""
    write(tmp_path / "pyproject.toml", "")
    write(tmp_path / "scoring.py", _SCORING)
    write(tmp_path / "validation.py", _NO_GRAD_CALLER)
    assert "No findings" in lint(".").out
    linted.clear()
    assert "No findings" in lint(".").out and linted == []
    write(tmp_path / "reports" / "weekly.py", "")
    lint(".")
    assert "scoring.py" in linted  # a new folder changes the listing of the project
    linted.clear()
    write(tmp_path / "reports" / "weekly.py", _GRAD_CALLER.replace("import scoring", "from .. import scoring"))
    write(tmp_path / "report.py", _GRAD_CALLER)
    run = lint(".")
    assert "scoring.py" in linted
    assert "scoring.py:6:13: TL006" in run.out
