"""The real `pre-commit` tool runs this checkout's hook (.pre-commit-hooks.yaml) in a fresh repository.

pre-commit clones the hook repository at a revision and pip-installs it into its own
virtual environment, so the test commits a snapshot of the working tree (the package,
pyproject.toml and the hook file) into a temporary git repository and points a
`.pre-commit-config.yaml` at it, exactly as a user's project points at torchlint.
"""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cli_helpers import BUGGY, CLEAN

ROOT = Path(__file__).resolve().parent.parent
pytest.importorskip("pre_commit", reason="pre-commit is in the test extra: pip install -e '.[test]'")

# Signs that pip could not reach a package index, as opposed to a broken hook.
OFFLINE_SIGNS = (
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "No matching distribution found",
    "Could not find a version that satisfies",
)


def git(cwd, *args):
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    return subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def snapshot_of_this_checkout(dest: Path) -> str:
    """Commit the installable part of the working tree into a new repository; return the commit."""
    for name in ("pyproject.toml", ".pre-commit-hooks.yaml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, dest / name)
    if not (dest / "README.md").exists():  # pyproject.toml names it as the long description
        (dest / "README.md").write_text("torchlint\n")
    shutil.copytree(ROOT / "torchlint", dest / "torchlint", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    git(dest, "init", "-q")
    git(dest, "add", ".")
    git(dest, "commit", "-q", "-m", "snapshot")
    return git(dest, "rev-parse", "HEAD")


def pre_commit(project: Path, home: Path, *args):
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    env.pop("NO_COLOR", None)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--color", "never", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def project_using_the_hook(tmp_path, args) -> Path:
    """A git repository whose .pre-commit-config.yaml runs this checkout's hook with ``args``."""
    hook_repo = tmp_path / "hook"
    project = tmp_path / "project"
    hook_repo.mkdir()
    project.mkdir()
    rev = snapshot_of_this_checkout(hook_repo)
    git(project, "init", "-q")
    (project / ".pre-commit-config.yaml").write_text(
        textwrap.dedent(f"""\
        repos:
          - repo: {hook_repo}
            rev: {rev}
            hooks:
              - id: torchlint
                args: {args}
        """)
    )
    return project


def first_run(project, tmp_path, *args):
    """The first `pre-commit run` (which installs the hook environment); skips when offline."""
    run = pre_commit(project, tmp_path / "cache", *args)
    output = run.stdout + run.stderr
    if run.returncode not in (0, 1) or "An unexpected error" in output:
        if any(sign in output for sign in OFFLINE_SIGNS):
            pytest.skip("no package index reachable to install the hook environment")
        pytest.fail(output)
    return run, output


def test_pre_commit_hook_fails_on_a_bug_and_passes_on_clean_code(tmp_path):
    project = project_using_the_hook(tmp_path, "[--select, TL016]")
    (project / "train.py").write_text(BUGGY)
    (project / "notes.txt").write_text("not python\n")
    git(project, "add", ".")

    failed, output = first_run(project, tmp_path, "--files", "train.py", "notes.txt")
    assert failed.returncode == 1, output
    assert "torchlint" in output and "Failed" in output
    assert "train.py:5:9: TL016 [backward-under-no-grad]" in output
    assert "notes.txt" not in output  # types: [python]

    (project / "train.py").write_text(CLEAN)
    passed = pre_commit(project, tmp_path / "cache", "--files", "train.py")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout


def test_pre_commit_hook_with_fix_fails_once_with_the_files_fixed(tmp_path):
    """`args: [--fix]`: like ruff's hook, the first run fixes the files and fails (pre-commit sees
    them modified); the second run, on the fixed files, passes."""
    project = project_using_the_hook(tmp_path, "[--fix]")
    view = textwrap.dedent("""\
        import torch
        def flatten(feat):
            n, c, h, w = feat.shape
            return feat.permute(0, 2, 3, 1).view(n, h * w, c)
        """)
    (project / "train.py").write_text(view)
    git(project, "add", ".")

    first, output = first_run(project, tmp_path, "--files", "train.py")
    assert first.returncode == 1, output
    assert "files were modified by this hook" in output
    assert (project / "train.py").read_text() == view.replace(".view(n,", ".reshape(n,")

    git(project, "add", ".")
    second = pre_commit(project, tmp_path / "cache", "--files", "train.py")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "Passed" in second.stdout
