"""bench/compare_findings.py, run as its users run it: a real subprocess on a small tree of files."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import textwrap

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "bench" / "compare_findings.py"

# Gradients are never cleared (TL001, line 7); the running total keeps every graph alive (TL010, line 8).
TRAIN = textwrap.dedent(
    """\
    import torch
    def train(model, loader, opt):
        total = 0.0
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            total += loss
        return total
    """
)
CLEAN = textwrap.dedent(
    """\
    import torch
    def evaluate(model, x):
        model.eval()
        with torch.no_grad():
            return model(x).argmax(1)
    """
)


def compare(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def make_tree(root: pathlib.Path) -> pathlib.Path:
    # The tree lies under a folder named `tests`: paths are taken relative to the tree, so the
    # folders above it cannot change what the rules see.
    tree = root / "tests" / "project"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "train.py").write_text(TRAIN)
    (tree / "evaluate.py").write_text(CLEAN)
    return tree


def test_save_writes_sorted_findings_with_paths_relative_to_the_tree(tmp_path):
    tree = make_tree(tmp_path)
    run = compare("save", tree, tmp_path / "base.json")
    assert run.returncode == 0, run.stderr
    assert "2 findings" in run.stdout
    saved = json.loads((tmp_path / "base.json").read_text())
    assert [(f["path"], f["line"], f["code"]) for f in saved] == [
        ("pkg/train.py", 7, "TL001"),
        ("pkg/train.py", 8, "TL010"),
    ]
    assert {"column", "end_line", "name", "severity", "message", "fix"} <= saved[0].keys()


def test_check_is_silent_and_exits_0_on_the_same_tree(tmp_path):
    tree = make_tree(tmp_path)
    compare("save", tree, tmp_path / "base.json")
    run = compare("check", tree, tmp_path / "base.json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert not [line for line in run.stdout.splitlines() if line.startswith(("+", "-"))]
    assert "identical" in run.stdout


def test_check_lists_added_and_removed_findings_and_exits_1(tmp_path):
    tree = make_tree(tmp_path)
    compare("save", tree, tmp_path / "base.json")
    # Fix TL001 (clear before the forward) and break evaluate.py (backward under no_grad: TL016).
    fixed = TRAIN.replace("        loss = torch", "        opt.zero_grad()\n        loss = torch")
    (tree / "pkg" / "train.py").write_text(fixed)
    (tree / "evaluate.py").write_text(CLEAN.replace("return model(x).argmax(1)", "model(x).sum().backward()"))
    run = compare("check", tree, tmp_path / "base.json")
    assert run.returncode == 1
    changes = [line for line in run.stdout.splitlines() if line.startswith(("+", "-"))]
    assert [line.split(" ", 2)[:2] for line in changes] == [
        ["+", "evaluate.py:5:"],
        ["+", "pkg/train.py:9:"],
        ["-", "pkg/train.py:7:"],
        ["-", "pkg/train.py:8:"],
    ]
    assert changes[0].split()[2] == "TL016"
    # TL010 moved one line down: same finding, new line, reported as one removed and one added.
    assert changes[1].split()[2] == changes[3].split()[2] == "TL010"
    assert changes[2].split()[2] == "TL001"
    assert "2 added, 2 removed" in run.stdout


def test_a_changed_message_is_a_difference(tmp_path):
    tree = make_tree(tmp_path)
    compare("save", tree, tmp_path / "base.json")
    saved = json.loads((tmp_path / "base.json").read_text())
    saved[0]["message"] = "an older wording"
    (tmp_path / "base.json").write_text(json.dumps(saved))
    run = compare("check", tree, tmp_path / "base.json")
    assert run.returncode == 1
    assert "- pkg/train.py:7: TL001 an older wording" in run.stdout.splitlines()


def test_the_linter_command_can_be_chosen(tmp_path):
    # --torchlint runs another linter command (a frozen copy for "before" baselines); options ride along.
    tree = make_tree(tmp_path)
    command = f"{sys.executable} -m torchlint --select TL010"
    run = compare("save", tree, tmp_path / "base.json", "--torchlint", command)
    assert run.returncode == 0, run.stderr
    assert [f["code"] for f in json.loads((tmp_path / "base.json").read_text())] == ["TL010"]


def test_unusable_input_exits_2_with_one_line(tmp_path):
    tree = make_tree(tmp_path)
    (tmp_path / "bad.json").write_text('{"not": "a list"}')
    for args in (
        ("check", tree, tmp_path / "missing.json"),
        ("check", tree, tmp_path / "bad.json"),
        ("save", tmp_path / "no-such-tree", tmp_path / "base.json"),
        ("save", tree, tmp_path / "base.json", "--torchlint", f"{sys.executable} -m torchlint --select TL999"),
    ):
        run = compare(*args)
        assert run.returncode == 2, (args, run.stdout, run.stderr)
        assert run.stderr.startswith("compare_findings: ")
