"""File discovery: *.py under directories, minus VCS folders, virtual environments, caches and builds."""

import os

import pytest
from cli_helpers import BUGGY, CLEAN, run_cli, write

from torchlint.engine import config
from torchlint.engine.files import discover


@pytest.fixture(autouse=True)
def _in_tmp(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    config.clear_cache()


def found(*paths):
    return [t.path for t in discover(list(paths) or ["."], config.find_settings)]


def test_recurses_in_sorted_order_and_only_into_python_files(tmp_path):
    for name in ("b.py", "a/z.py", "a/b/c.py", "README.md", "setup.cfg", "a/data.json", "a/stub.pyi"):
        write(tmp_path / name)
    assert found() == ["a/b/c.py", "a/z.py", "b.py"]


@pytest.mark.parametrize(
    "skipped",
    [
        ".git/hooks/x.py",
        ".venv/lib/x.py",
        "venv/lib/x.py",
        "pkg/__pycache__/x.py",
        "build/lib/x.py",
        "dist/x.py",
        "pkg.egg-info/x.py",
        ".tox/py311/x.py",
        "node_modules/x.py",
        ".mypy_cache/x.py",
    ],
)
def test_default_excluded_folders(tmp_path, skipped):
    write(tmp_path / skipped)
    write(tmp_path / "train.py")
    assert found() == ["train.py"]


def test_virtualenv_under_any_name_is_skipped(tmp_path):
    write(tmp_path / "myenv" / "pyvenv.cfg", "home = /usr/bin\n")
    write(tmp_path / "myenv" / "lib" / "site.py")
    write(tmp_path / "train.py")
    assert found() == ["train.py"]


def test_explicit_paths_are_linted_whatever_their_name(tmp_path):
    write(tmp_path / "build" / "train.py")
    write(tmp_path / "scripts" / "train")  # no .py suffix, named explicitly
    assert found("build", "scripts/train") == [os.path.join("build", "train.py"), "scripts/train"]


def test_each_file_once_even_when_named_twice(tmp_path):
    write(tmp_path / "pkg" / "a.py")
    assert found("pkg", "pkg/a.py", "./pkg/a.py") == [os.path.join("pkg", "a.py")]


def test_symlinked_directories_are_not_followed(tmp_path):
    write(tmp_path / "pkg" / "a.py")
    os.symlink(tmp_path, tmp_path / "pkg" / "loop")  # would recurse forever if followed
    assert found() == ["pkg/a.py"]


def test_a_directory_without_python_files_warns_and_exits_zero(tmp_path):
    write(tmp_path / "docs" / "index.md", "# docs\n")
    run = run_cli(["docs"])
    assert run.code == 0
    assert "no Python files or notebooks found in docs" in run.err


def test_findings_across_a_tree_are_reported_in_path_order(tmp_path):
    write(tmp_path / "z.py", BUGGY)
    write(tmp_path / "a" / "train.py", BUGGY)
    write(tmp_path / "a" / "eval.py", CLEAN)
    run = run_cli(["-q", "--select", "TL016", "."])
    assert [line.split(":")[0] for line in run.out.splitlines()] == ["a/train.py", "z.py"]
