"""The pre-commit and GitHub Actions snippets of README.md and docs/ci.md, run as a user copies
them: the same text, with only the repository's URL pointed at a local clone of this
repository (so the `rev:` / `@tag` they name must exist in it).

pre-commit runs for real (it clones the repository at the `rev:` and pip-installs it into its
own environment); each workflow's `run:` steps run in order in a fresh virtual environment
(the `uses:` steps are GitHub's: checkout is the project folder, setup-python the venv).
"""

import json
import os
import re
import shutil
import subprocess
import venv
from pathlib import Path

import pytest
from cli_helpers import BUGGY
from tool_helpers import OFFLINE_SIGNS, git, pre_commit

from torchlint import __url__, __version__

yaml = pytest.importorskip("yaml", reason="PyYAML comes with pre-commit: pip install -e '.[test]'")

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [ROOT / "README.md", ROOT / "docs" / "ci.md"]


def yaml_blocks(path: Path) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", path.read_text(), re.S)


def precommit_configs() -> list[str]:
    return sorted({block for path in SOURCES for block in yaml_blocks(path) if "repos:" in block})


def workflows() -> list[str]:
    return [block for path in SOURCES for block in yaml_blocks(path) if "\njobs:" in block]


def documented_revs() -> set[str]:
    """The revisions the snippets install: pre-commit's `rev:` and pip's `git+URL@rev`."""
    revs = {rev for block in precommit_configs() for rev in re.findall(r"rev: (\S+)", block)}
    return revs | {rev for block in workflows() for rev in re.findall(r"git\+\S+?@([\w.\-]+)", block)}


def tags() -> list[str]:
    return subprocess.run(["git", "-C", str(ROOT), "tag", "-l"], capture_output=True, text=True).stdout.split()


def test_the_docs_have_the_snippets_and_name_this_release():
    assert len(precommit_configs()) == 1  # README's and docs/ci.md's are the same text
    assert len(workflows()) == 2
    for block in precommit_configs() + workflows():
        assert __url__ in block
    assert documented_revs() == {f"v{__version__}"}
    if tags():  # a checkout with tags (a clone without them cannot tell)
        assert documented_revs() <= set(tags()), "tag the release: git tag v" + __version__


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A clone of this repository, tags included, as GitHub would serve it."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    if not documented_revs() <= set(tags()):
        pytest.skip("this clone lacks the release tag the docs name (a shallow or tag-less checkout)")
    path = tmp_path_factory.mktemp("clone") / "torchlint"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(path)], check=True, capture_output=True)
    return path


def project(path: Path) -> Path:
    """A user's project: a training script with TL016 on line 5."""
    path.mkdir()
    git(path, "init", "-q")
    (path / "train.py").write_text(BUGGY)
    return path


def skip_if_offline(output: str):
    if any(sign in output for sign in OFFLINE_SIGNS):
        pytest.skip("no package index reachable to install torchlint")


def test_precommit_snippet_runs_as_written(clone, tmp_path):
    (config,) = precommit_configs()
    user = project(tmp_path / "project")
    (user / ".pre-commit-config.yaml").write_text(config.replace(__url__, str(clone)))
    git(user, "add", ".")
    run = pre_commit(user, tmp_path / "cache", "--files", "train.py")
    output = run.stdout + run.stderr
    skip_if_offline(output)
    assert run.returncode == 1, output
    assert "train.py:5:9: TL016 [backward-under-no-grad]" in output


@pytest.fixture(scope="module")
def workflow_env(tmp_path_factory):
    """What `actions/setup-python` gives: a fresh Python with nothing installed."""
    folder = tmp_path_factory.mktemp("venv") / "venv"
    venv.EnvBuilder(with_pip=True).create(folder)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "NO_COLOR")}
    env["PATH"] = f"{folder / 'bin'}{os.pathsep}{env['PATH']}"
    return env


@pytest.mark.parametrize("index", [0, 1], ids=["annotations", "code-scanning"])
def test_workflow_snippet_runs_as_written(clone, tmp_path, workflow_env, index):
    workflow = yaml.safe_load(workflows()[index])
    (job,) = workflow["jobs"].values()
    user = project(tmp_path / "project")
    steps = [step["run"] for step in job["steps"] if "run" in step]
    assert any("pip install" in step for step in steps) and any("torchlint check" in step for step in steps)
    results = []
    for step in steps:
        command = step.replace(f"git+{__url__}", f"git+file://{clone}")
        results.append(
            subprocess.run(
                ["bash", "-e", "-c", command], cwd=user, env=workflow_env, capture_output=True, text=True, timeout=600
            )
        )
        skip_if_offline(results[-1].stdout + results[-1].stderr)
    *installs, check = results
    assert all(run.returncode == 0 for run in installs), [run.stderr for run in installs]
    if index == 0:  # annotations: the job fails on findings, each is a workflow command
        assert check.returncode == 1, check.stderr
        assert check.stdout.startswith("::error file=train.py,line=5,col=9,endLine=5,endColumn=24,title=TL016")
    else:  # code scanning: the report is uploaded whatever it holds
        assert check.returncode == 0, check.stderr
        sarif = json.loads((user / "torchlint.sarif").read_text())
        assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["TL016"]
    # torchlint came from the workflow's own install, not from this environment
    assert shutil.which("torchlint", path=workflow_env["PATH"]).startswith(workflow_env["PATH"].split(os.pathsep)[0])
