"""Running the real tools the tests drive: git and pre-commit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
