"""README.md and docs/: generated pages up to date, links that resolve, examples that are true."""

import pathlib
import re
import shlex
import subprocess
import sys

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from torchlint.engine import ruledocs
from torchlint.engine.finding import rule_url
from torchlint.engine.rule import all_rules

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").rglob("*.md"))


def test_generated_rule_pages_and_readme_table_are_current():
    assert ruledocs.stale() == [], "run: python -m torchlint.engine.ruledocs --write"
    for code, rule in all_rules().items():
        page = ROOT / "docs" / "rules" / f"{code}-{rule.name}.md"
        assert page.read_text().count(f"# {code} {rule.name} ({rule.severity})") == 1
        assert f"[{code}](docs/rules/{code}-{rule.name}.md)" in README.read_text()


def test_a_stale_page_is_noticed(tmp_path):
    (tmp_path / "docs" / "rules").mkdir(parents=True)
    (tmp_path / "README.md").write_text(f"x\n{ruledocs.BEGIN}\n{ruledocs.END}\n")
    ruledocs.write(tmp_path)
    assert ruledocs.stale(tmp_path) == []
    page = tmp_path / "docs" / "rules" / "TL001-missing-zero-grad.md"
    page.write_text(page.read_text().replace("optimizer", "optimiser", 1))
    (tmp_path / "docs" / "rules" / "TL999-gone.md").write_text("a rule that no longer exists\n")
    assert ruledocs.stale(tmp_path) == [page, tmp_path / "docs" / "rules" / "TL999-gone.md"]


def test_readme_keeps_the_quick_start_commands():
    text = README.read_text()
    assert "pip install -e . && torchlint examples/" in text
    assert "pip install torch==2.13.0 -e '.[test]' && python -m pytest -q" in text
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install torch==2.13.0 -e '.[test]' && python -m pytest -q" in ci
    # A virtual environment first, and the CPU-only torch wheel before the test extra pulls torch.
    quick_start = text[text.index("## Quick start") : text.index("## What it prints")]
    commands = [line for line in quick_start.splitlines() if line.startswith(("python ", "pip "))]
    assert commands[0].startswith("python -m venv .venv && . .venv/bin/activate")
    assert commands[2] == "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
    assert commands[3].startswith("pip install torch==2.13.0 -e '.[test]'")


def test_readme_is_short():
    assert len(README.read_text().splitlines()) < 200


def test_readme_example_output_is_what_the_command_prints():
    text = README.read_text()
    block = re.search(r"```console\n\$ (?P<command>[^\n]+)\n(?P<output>.*?)```", text, re.S)
    args = shlex.split(block["command"])
    assert args[:2] == ["torchlint", "check"]
    run = subprocess.run(
        [sys.executable, "-m", "torchlint", *args[1:], "--no-cache"], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 1
    assert run.stdout == block["output"]


def _links(path: pathlib.Path):
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)  # not inside code blocks
    return re.findall(r"\]\(([^)\s]+)\)", text)


def _anchors(path: pathlib.Path) -> set[str]:
    """GitHub's anchors for the headings of a Markdown file."""
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    anchors = set()
    for heading in re.findall(r"^#+ (.+)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path):
    for link in _links(path):
        if re.match(r"^[a-z]+:", link):
            continue
        target, _, anchor = link.partition("#")
        resolved = (path.parent / target).resolve() if target else path
        assert resolved.exists(), f"{path.name}: {link}"
        if anchor and resolved.suffix == ".md":
            assert anchor in _anchors(resolved), f"{path.name}: {link}"


def test_the_configuration_example_is_a_valid_configuration(tmp_path):
    text = (ROOT / "docs" / "configuration.md").read_text()
    example = re.search(r"```toml\n(.*?)```", text, re.S)[1]
    assert tomllib.loads(example)["tool"]["torchlint"]
    (tmp_path / "pyproject.toml").write_text(example)
    (tmp_path / "train.py").write_text("import torch\n")
    run = subprocess.run(
        [sys.executable, "-m", "torchlint", "check", "."], cwd=tmp_path, capture_output=True, text=True
    )
    assert (run.returncode, run.stderr) == (0, "")


def test_every_finding_links_its_rule_page():
    from cli_helpers import BUGGY

    from torchlint.engine.lint import lint_source

    (finding,) = lint_source(BUGGY, "t.py", [all_rules()["TL016"]])
    assert finding.url == finding.to_dict()["url"] == rule_url("TL016", "backward-under-no-grad")
    assert finding.url.endswith("/blob/main/docs/rules/TL016-backward-under-no-grad.md")
    assert (ROOT / "docs" / "rules" / finding.url.rsplit("/", 1)[1]).exists()
