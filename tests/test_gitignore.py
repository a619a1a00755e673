"""Directory discovery respects what git ignores: real repositories, real git."""

import json
import os
import shutil

import pytest
from cli_helpers import BUGGY, run_cli, write
from tool_helpers import git

from torchlint.engine import config

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture(autouse=True)
def _in_tmp(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    # No user-wide excludes file may change what these repositories ignore.
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    config.clear_cache()


def linted(*args):
    run = run_cli(["check", "--format", "json", "--select", "TL016", *args])
    return sorted({f["path"] for f in json.loads(run.out)}), run


@pytest.fixture
def repo(tmp_path):
    """A training repository with the usual clutter git is told to ignore."""
    git(tmp_path, "init", "-q")
    write(tmp_path / ".gitignore", "wandb/\n*_generated.py\n/outputs\n")
    write(tmp_path / "train.py", BUGGY)
    # a wandb run keeps a copy of the training code
    write(tmp_path / "wandb" / "run-20240101" / "files" / "code" / "train.py", BUGGY)
    write(tmp_path / "model_generated.py", BUGGY)
    write(tmp_path / "outputs" / "snapshot.py", BUGGY)
    write(tmp_path / "src" / "outputs" / "keep.py", BUGGY)  # `/outputs` is anchored at the top
    write(tmp_path / "vendor" / ".gitignore", "copy/\n!copy_kept.py\n")  # nested ignore file
    write(tmp_path / "vendor" / "copy" / "lib.py", BUGGY)
    write(tmp_path / "vendor" / "mine.py", BUGGY)
    write(tmp_path / "scratch.py", BUGGY)
    (tmp_path / ".git" / "info").mkdir(exist_ok=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("scratch.py\n")
    return tmp_path


def test_ignored_files_and_folders_are_not_linted(repo):
    paths, run = linted(".")
    assert paths == ["src/outputs/keep.py", "train.py", "vendor/mine.py"]
    assert run.err == ""


def test_a_tracked_file_is_linted_even_if_a_pattern_matches_it(repo):
    git(repo, "add", "-f", "model_generated.py")
    assert "model_generated.py" in linted(".")[0]


def test_no_respect_gitignore_lints_everything(repo):
    everything = [
        "model_generated.py",
        "outputs/snapshot.py",
        "scratch.py",
        "src/outputs/keep.py",
        "train.py",
        "vendor/copy/lib.py",
        "vendor/mine.py",
        "wandb/run-20240101/files/code/train.py",
    ]
    assert linted(".", "--no-respect-gitignore")[0] == everything
    write(repo / "pyproject.toml", "[tool.torchlint]\nrespect-gitignore = false\n")
    config.clear_cache()
    assert linted(".")[0] == everything


def test_a_folder_named_on_the_command_line_is_linted_as_asked(repo):
    assert linted("wandb")[0] == ["wandb/run-20240101/files/code/train.py"]
    assert linted("scratch.py")[0] == ["scratch.py"]


def test_subfolders_and_nested_repositories_use_their_own_rules(repo):
    assert linted("vendor")[0] == ["vendor/mine.py"]
    nested = repo / "third_party" / "lib"
    write(nested / "a.py", BUGGY)
    write(nested / "build_cache.py", BUGGY)
    git(nested, "init", "-q")
    write(nested / ".gitignore", "build_cache.py\n")
    assert linted("third_party")[0] == ["third_party/lib/a.py"]


def test_gitignore_outside_a_repository_means_nothing(tmp_path):
    write(tmp_path / ".gitignore", "*.py\n")
    write(tmp_path / "train.py", BUGGY)
    assert linted(".")[0] == ["train.py"]


def test_without_git_everything_is_linted_and_one_warning_says_why(repo, monkeypatch, tmp_path_factory):
    monkeypatch.setenv("PATH", str(tmp_path_factory.mktemp("empty-bin")))
    paths, run = linted(".")
    assert "wandb/run-20240101/files/code/train.py" in paths
    assert run.err == (
        f"torchlint: warning: cannot ask git which files it ignores in {os.path.realpath(repo)}"
        " (git is not installed); its .gitignore is not respected there\n"
    )
