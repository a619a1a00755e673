"""The real `pre-commit` tool runs this checkout's hook (.pre-commit-hooks.yaml) in a fresh repository.

pre-commit clones the hook repository at a revision and pip-installs it into its own
virtual environment, so the test commits a snapshot of the working tree (the package,
pyproject.toml and the hook file) into a temporary git repository and points a
`.pre-commit-config.yaml` at it, exactly as a user's project points at torchlint.
"""

import shutil
import textwrap
from pathlib import Path

import pytest
from cli_helpers import BUGGY, CLEAN
from notebook_helpers import markdown, write_notebook
from tool_helpers import OFFLINE_SIGNS, git, pre_commit

ROOT = Path(__file__).resolve().parent.parent
pytest.importorskip("pre_commit", reason="pre-commit is in the test extra: pip install -e '.[test]'")


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


@pytest.fixture(scope="module")
def hook(tmp_path_factory):
    """(hook repository, its commit, PRE_COMMIT_HOME): one snapshot and one hook environment
    for the whole module, so pre-commit installs torchlint once."""
    base = tmp_path_factory.mktemp("precommit")
    repo = base / "hook"
    repo.mkdir()
    return repo, snapshot_of_this_checkout(repo), base / "cache"


def new_project(path: Path, hook, args=("--select", "TL016")) -> Path:
    """A git repository whose .pre-commit-config.yaml uses the hook (with ``args``, if any)."""
    repo, rev, _ = hook
    path.mkdir()
    git(path, "init", "-q")
    config = f"repos:\n  - repo: {repo}\n    rev: {rev}\n    hooks:\n      - id: torchlint\n"
    if args:
        config += f"        args: [{', '.join(args)}]\n"
    (path / ".pre-commit-config.yaml").write_text(config)
    return path


def run_hook(project: Path, hook, *files):
    git(project, "add", ".")
    result = pre_commit(project, hook[2], "--files", *files)
    output = result.stdout + result.stderr
    if result.returncode not in (0, 1) or "An unexpected error" in output:
        if any(sign in output for sign in OFFLINE_SIGNS):
            pytest.skip("no package index reachable to install the hook environment")
        pytest.fail(output)
    return result.returncode, output


def test_pre_commit_hook_fails_on_a_bug_and_passes_on_clean_code(tmp_path, hook):
    project = new_project(tmp_path / "project", hook)
    (project / "train.py").write_text(BUGGY)
    (project / "notes.txt").write_text("not python\n")
    write_notebook(project / "explore.ipynb", markdown("# Explore"), BUGGY)

    code, output = run_hook(project, hook, "train.py", "notes.txt", "explore.ipynb")
    assert code == 1, output
    assert "torchlint" in output and "Failed" in output
    assert "train.py:5:9: TL016 [backward-under-no-grad]" in output
    assert "explore.ipynb:cell 2:5:9: TL016 [backward-under-no-grad]" in output  # types_or: [python, jupyter]
    assert "notes.txt" not in output

    (project / "train.py").write_text(CLEAN)
    write_notebook(project / "explore.ipynb", markdown("# Explore"), CLEAN)
    code, output = run_hook(project, hook, "train.py", "explore.ipynb")
    assert code == 0, output
    assert "Passed" in output


# An executable Python script without a suffix (pre-commit recognises it by its shebang) that
# would leave a mark if anything ran it, and has a TL016 bug on line 8.
SCRIPT = """\
#!/usr/bin/env python
import pathlib
import torch
pathlib.Path("EXECUTED").write_text("the hook ran this file")
def train(model, opt, x, y):
    with torch.no_grad():
        loss = model(x).sub(y).pow(2).mean()
        loss.backward()
train(model, opt, x, y)  # a script's function nobody calls is dead code (analysis.liveness)
"""


def test_staged_files_named_like_subcommands_are_linted_never_run(tmp_path, hook):
    """pre-commit passes the staged files sorted: with `entry: torchlint`, a file named `run`
    came first and turned the hook into `torchlint run train.py` (executing the training
    script), and a file named `rules` made it a usage error. The hook has no `args` here, as
    in the README's example (args come before the file names)."""
    project = new_project(tmp_path / "project", hook, args=())
    (project / "run").write_text(SCRIPT)
    (project / "run").chmod(0o755)
    (project / "train.py").write_text(SCRIPT)
    code, output = run_hook(project, hook, "run", "train.py")
    assert not (project / "EXECUTED").exists(), output
    assert code == 1, output
    for name in ("run", "train.py"):
        assert f"{name}:8:9: TL016 [backward-under-no-grad]" in output

    (project / "rules").write_text(SCRIPT)
    (project / "rules").chmod(0o755)
    code, output = run_hook(project, hook, "rules", "run", "train.py")
    assert not (project / "EXECUTED").exists(), output
    assert code == 1, output
    for name in ("rules", "run", "train.py"):
        assert f"{name}:8:9: TL016 [backward-under-no-grad]" in output
    assert "error:" not in output and "note:" not in output


def test_pre_commit_hook_with_fix_fails_once_with_the_files_fixed(tmp_path, hook):
    """`args: [--fix]`: like ruff's hook, the first run fixes the files and fails (pre-commit sees
    them modified); the next run, on the fixed files, passes."""
    project = new_project(tmp_path / "project", hook, args=("--fix",))
    view = textwrap.dedent("""\
        import torch
        def flatten(conv, x):
            feat = conv(x)
            n, c, h, w = feat.shape
            return feat.permute(0, 2, 3, 1).view(n, h, w * c)
        """)
    (project / "train.py").write_text(view)
    code, output = run_hook(project, hook, "train.py")
    assert code == 1, output
    assert "files were modified by this hook" in output
    assert (project / "train.py").read_text() == view.replace(".view(n,", ".reshape(n,")
    code, output = run_hook(project, hook, "train.py")
    assert code == 0, output
    assert "Passed" in output


def test_pre_commit_hook_with_fix_fixes_a_staged_notebook(tmp_path, hook):
    """`args: [--fix]` on a staged notebook: the first run rewrites the cell that needs it and
    fails (the file was modified), leaving every other byte of the notebook as it was; the next
    run passes."""
    project = new_project(tmp_path / "project", hook, args=("--fix",))
    flatten = "def flatten(conv, x):\n    feat = conv(x)\n    n, c, h, w = feat.shape\n    return feat.permute(0, 2, 3, 1).view(n, h, w * c)"
    notebook = write_notebook(project / "explore.ipynb", markdown("# Explore"), "import torch", flatten)
    before = notebook.read_text()
    code, output = run_hook(project, hook, "explore.ipynb")
    assert code == 1, output
    assert "files were modified by this hook" in output
    assert notebook.read_text() == before.replace(".view(n, h, w * c)", ".reshape(n, h, w * c)")
    code, output = run_hook(project, hook, "explore.ipynb")
    assert code == 0, output
    assert "Passed" in output
