"""Fixes in notebooks: real `.ipynb` files on disk through `torchlint check --fix/--diff/--format`,
fixed cell by cell with everything else of the file kept byte for byte."""

import ast
import difflib
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cli_helpers import run_cli
from notebook_helpers import markdown, notebook_json, write_notebook

from torchlint.analysis.context import FileContext
from torchlint.engine import config
from torchlint.engine.autofix import make_edits
from torchlint.engine.finding import Finding, Fix
from torchlint.engine.fixers import fix_for
from torchlint.engine.lint import lint_text
from torchlint.engine.notebook import parse_notebook
from torchlint.engine.notebookfix import CellMapper

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "mnist_tutorial_buggy.ipynb"

# TL008 (safe fix: `.view` -> `.reshape`) on the last line.
VIEW_CELL = textwrap.dedent(
    """\
    def flatten(conv, x):
        feat = conv(x)
        n, c, h, w = feat.shape
        return feat.permute(0, 2, 3, 1).view(n, h, w * c)"""
)


@pytest.fixture(autouse=True)
def _in_tmp(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    config.clear_cache()


def sources_of(text: str) -> dict[int, str]:
    """The code cells' sources by cell number (counting every cell), as one text each."""
    cells = json.loads(text)["cells"]
    return {
        number: "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        for number, cell in enumerate(cells, 1)
        if cell["cell_type"] == "code"
    }


def sources(path) -> dict[int, str]:
    return sources_of(Path(path).read_text(encoding="utf-8"))


def program_context(path):
    """A real notebook's program, and the context rules see, for fixes built by hand."""
    program = parse_notebook(path.read_text())
    return program, FileContext(path.name, program.source, ast.parse(program.source))


def findings(path, *args):
    return json.loads(run_cli(["check", path, "--format", "json", *args]).out)


def tutorial(tmp_path) -> Path:
    """The bundled tutorial notebook, with saved outputs, execution counts and cell metadata
    on the cells that the fixes change."""
    data = json.loads(EXAMPLE.read_text())
    for cell in data["cells"]:
        if cell["cell_type"] == "code":
            cell["metadata"] = {"tags": ["keep-me"], "collapsed": False}
            cell["execution_count"] = 7
            cell["outputs"] = [{"name": "stdout", "output_type": "stream", "text": ["epoch 0: loss 2.301\n", "done\n"]}]
    path = tmp_path / "tutorial.ipynb"
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


TUTORIAL_FIXED = {
    7: """\
        x = torch.flatten(x, 1)
        x = F.dropout(F.relu(self.fc1(x)), p=0.5, training=self.training)  # expect: TL011
        return self.fc2(x)
""",
    10: """\
%%time
for epoch in range(3):
    running_loss = 0.0
    for i, (images, labels) in enumerate(train_loader):
        optimizer.zero_grad()
        images, labels = images.to(device), labels.to(device)
        loss = criterion(model(images), labels)  # expect: TL012
        loss.backward()
        optimizer.step()  # expect: TL001
        running_loss += loss.item()  # expect: TL010
    print(f"epoch {epoch}: loss {running_loss / len(train_loader):.3f}")""",
    12: """\
correct = 0
model.eval()
with torch.no_grad():
    for images, labels in test_loader:
        images, labels = images.to(device), labels.to(device)
        predictions = model(images).argmax(dim=1)  # expect: TL005, TL006
        correct += (predictions == labels).sum().item()
print(f"accuracy: {correct / len(test_set):.3f}")""",
}


def test_fix_rewrites_only_the_sources_of_the_cells_it_fixes(tmp_path):
    path = tutorial(tmp_path)
    before = path.read_text()
    run = run_cli(["check", path.name, "--fix", "--unsafe-fixes", "--show-fixes"])
    assert run.code == 0, run.out + run.err
    assert run.err == ""
    assert "Fixed 6 findings in 1 file." in run.out
    assert "    1 x TL001\n    1 x TL005\n    1 x TL006\n    1 x TL010\n    1 x TL011\n    1 x TL012\n" in run.out

    old, new = sources(EXAMPLE), sources(path)
    assert [number for number in old if old[number] != new[number]] == [7, 10, 12]
    assert new[7].endswith(TUTORIAL_FIXED[7] + "\n\nmodel = Net().to(device)\nmodel?")  # `model?` kept
    assert "F.softmax" not in new[7]
    assert new[10] == TUTORIAL_FIXED[10]
    assert new[12] == TUTORIAL_FIXED[12]

    # Everything but the sources is as it was: ids, metadata, outputs, counts, notebook metadata.
    old_data, new_data = json.loads(before), json.loads(path.read_text())
    for cell in old_data["cells"] + new_data["cells"]:
        cell.pop("source")
    assert old_data == new_data
    # ... and so is its text: the lines that differ are lines of sources (strings in a list,
    # as nbformat writes them), everything else byte for byte, the final newline included.
    changed = [line for line in difflib.ndiff(before.splitlines(), path.read_text().splitlines()) if line[0] in "+-"]
    assert changed and all(re.fullmatch(r'[+-]     ".*",?', line) for line in changed), changed
    assert path.read_text().endswith("}\n")


def test_fixing_again_changes_nothing_and_the_fixed_rules_are_quiet(tmp_path):
    path = tutorial(tmp_path)
    run_cli(["check", path.name, "--fix", "--unsafe-fixes"])
    fixed = path.read_bytes()
    again = run_cli(["check", path.name, "--fix", "--unsafe-fixes"])
    assert (again.code, path.read_bytes()) == (0, fixed)
    assert "Fixed" not in again.out
    assert findings(path.name, "--select", "TL001,TL005,TL006,TL010,TL011,TL012") == []
    diff = run_cli(["check", path.name, "--diff", "--unsafe-fixes"])
    assert (diff.code, diff.out, diff.err) == (0, "", "No fixes to apply.\n")


def test_findings_carry_their_fix_located_by_cell(tmp_path):
    write_notebook(tmp_path / "nb.ipynb", "import torch", markdown("## Model"), VIEW_CELL)
    text = run_cli(["check", "nb.ipynb"]).out
    assert "nb.ipynb:cell 3:4:12: TL008 [*] [view-after-permute]" in text
    assert "[*] 1 fixable with `torchlint --fix`" in text
    (finding,) = findings("nb.ipynb")
    assert finding["cell"] == 3
    assert finding["fix"] == {
        "description": "Use `.reshape(...)`",
        "applicability": "safe",
        "edits": [{"cell": 3, "line": 4, "column": 37, "end_line": 4, "end_column": 41, "text": "reshape"}],
    }


def apply_cell_edits(cell_sources: dict[int, str], edits) -> dict[int, str]:
    """What a consumer of the JSON does: replace each edit's range of its cell's lines."""
    out = dict(cell_sources)
    for edit in sorted(edits, key=lambda e: (e["cell"], e["line"], e["column"]), reverse=True):
        lines = out[edit["cell"]].split("\n")
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line) + 1)
        start = starts[edit["line"] - 1] + edit["column"] - 1
        end = starts[edit["end_line"] - 1] + edit["end_column"] - 1
        out[edit["cell"]] = out[edit["cell"]][:start] + edit["text"] + out[edit["cell"]][end:]
    return out


def test_json_edits_apply_to_the_cells_as_fix_does(tmp_path):
    path = tutorial(tmp_path)
    data = findings(path.name, "--select", "TL001,TL010,TL011", "--unsafe-fixes")
    assert [(f["code"], f["cell"]) for f in data] == [("TL011", 7), ("TL001", 10), ("TL010", 10)]
    assert all(edit["cell"] == f["cell"] for f in data for edit in f["fix"]["edits"])
    by_json = apply_cell_edits(sources(path), [edit for f in data for edit in f["fix"]["edits"]])
    run_cli(["check", path.name, "--fix", "--select", "TL001,TL010,TL011"])
    assert by_json == sources(path)


def sarif_replacements(path, *args):
    document = json.loads(run_cli(["check", path, "--format", "sarif", *args]).out)
    return [
        replacement
        for result in document["runs"][0]["results"]
        for fix in result.get("fixes", ())
        for change in fix["artifactChanges"]
        for replacement in change["replacements"]
    ]


def apply_sarif(text: str, replacements) -> str:
    """Apply SARIF replacements to a file's text (1-based lines and code point columns)."""
    starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]

    def offset(line, column):
        return starts[line - 1] + column - 1

    for r in sorted(replacements, key=lambda r: (r["deletedRegion"]["startLine"], r["deletedRegion"]["startColumn"]))[
        ::-1
    ]:
        region = r["deletedRegion"]
        start = offset(region["startLine"], region["startColumn"])
        end = offset(region["endLine"], region["endColumn"])
        text = text[:start] + r["insertedContent"]["text"] + text[end:]
    return text


@pytest.mark.parametrize("one_string", [False, True])
def test_sarif_fixes_are_replacements_of_the_ipynb_text(tmp_path, one_string):
    """The regions are those of the file as stored, found exactly even after escaped characters
    (quotes, tabs, backslashes, non-ASCII); applying the replacements gives the fixed notebook."""
    cell = textwrap.dedent(
        """\
        def train(model, loader, opt):
            for x, y in loader:
                print("batch\\t", "é", "\\\\")
                loss = model(x).sub(y).pow(2).mean()
                loss.backward()
                opt.step()"""
    )
    flatten = 'print("\\"quoted\\"", "ü"); ' + VIEW_CELL.splitlines()[3].strip().replace("return ", "out = ")
    path = write_notebook(
        tmp_path / "nb.ipynb",
        "import torch\nfeat = torch.ones(1, 2, 3, 4)\nn, c, h, w = feat.shape",
        cell,
        flatten,
        one_string_sources=one_string,
    )
    replacements = sarif_replacements("nb.ipynb", "--select", "TL001,TL008")
    assert {r["properties"]["cell"] for r in replacements} == {2, 3}
    patched = apply_sarif(path.read_text(), replacements)
    run_cli(["check", "nb.ipynb", "--fix", "--select", "TL001,TL008"])
    assert sources(path) == sources_of(patched)
    assert "    for x, y in loader:\n        opt.zero_grad()\n" in sources(path)[2]
    assert ".reshape(n, h, w * c)" in sources(path)[3]


def test_magic_markdown_and_time_cells_keep_their_ipython_lines(tmp_path):
    """Code cells with a magic cell and a markdown cell between them; a fix inside `%time`'s
    statement, one in a `%%time` cell, one inserted before a shell escape in a loop."""
    path = write_notebook(
        tmp_path / "nb.ipynb",
        "import torch\nmodel = torch.nn.Linear(3, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)",
        "!pip install -q torchvision\n%matplotlib inline",
        markdown("## Shapes"),
        "feat = torch.randn(2, 3, 4, 5)\nn, c, h, w = feat.shape\n%time out = feat.permute(0, 2, 3, 1).view(n, h, w * c)",
        "%%time\nfor x, y in loader:\n    !nvidia-smi\n    model(x).sum().backward()\n    opt.step()",
    )
    run = run_cli(["check", "nb.ipynb", "--fix"])
    assert (run.code, run.err) == (0, ""), run.out + run.err
    assert sources(path) == {
        1: "import torch\nmodel = torch.nn.Linear(3, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)",
        2: "!pip install -q torchvision\n%matplotlib inline",
        4: "feat = torch.randn(2, 3, 4, 5)\nn, c, h, w = feat.shape\n"
        "%time out = feat.permute(0, 2, 3, 1).reshape(n, h, w * c)",
        5: "%%time\nfor x, y in loader:\n    opt.zero_grad()\n    !nvidia-smi\n    model(x).sum().backward()\n"
        "    opt.step()",
    }


def test_code_moved_between_cells_lands_next_to_its_statement(tmp_path):
    """TL017's fix moves `model.to(...)` from cell 4 to just before the optimizer, the first
    statement of cell 3: the insertion falls between cells 1 and 3 and goes into cell 3."""
    path = write_notebook(
        tmp_path / "nb.ipynb",
        "import torch\nmodel = torch.nn.Linear(3, 1)\nckpt = torch.load('c.pt')\nmodel.load_state_dict(ckpt['model'])\n",
        markdown("## Optimizer"),
        "optimizer = torch.optim.Adam(model.parameters())\noptimizer.load_state_dict(ckpt['opt'])",
        "model.to('cuda')\nfor x, y in loader:\n    optimizer.zero_grad()\n    model(x).sum().backward()\n"
        "    optimizer.step()",
    )
    assert [f["code"] for f in findings("nb.ipynb")] == ["TL017"]
    run_cli(["check", "nb.ipynb", "--fix"])
    fixed = sources(path)
    assert fixed[1].endswith("model.load_state_dict(ckpt['model'])\n")  # the newline it ended with
    assert fixed[3] == "model.to('cuda')\noptimizer = torch.optim.Adam(model.parameters())\n" + (
        "optimizer.load_state_dict(ckpt['opt'])"
    )
    assert fixed[4].startswith("for x, y in loader:")


def test_a_fix_that_would_change_ipython_syntax_is_skipped_and_said_so(tmp_path):
    """Putting the evaluation loop under `with torch.no_grad():` would re-indent a shell escape."""
    data = json.loads(EXAMPLE.read_text())
    data["cells"][11]["source"].insert(2, "    !echo batch\n")
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(data, indent=1) + "\n")
    run = run_cli(["check", "nb.ipynb", "--fix", "--unsafe-fixes", "--select", "TL005,TL006", "-q"])
    assert run.code == 1
    assert run.err == (
        "torchlint: warning: nb.ipynb:cell 12:6: TL006 fix skipped: it would change `!echo batch`"
        " (IPython syntax) in cell 12\n"
    )
    assert run.out.startswith("nb.ipynb:cell 12:6:19: TL006 [eval-without-no-grad]")
    assert sources(path)[12].startswith("correct = 0\nmodel.eval()\nfor images, labels in test_loader:\n")


def test_a_fix_that_would_span_cells_is_not_offered(tmp_path):
    """An edit over two cells (TL019's wrap-in-main, here built by hand on a real notebook) is
    skipped and said so; TL019's fix is not even offered in notebooks, as its docs say."""
    path = write_notebook(tmp_path / "nb.ipynb", "import torch\nx = torch.ones(3)", markdown("text"), "y = x * 2")
    program, ctx = program_context(path)
    moved = ctx.tree.body[1:]
    finding = Finding(
        "nb.ipynb",
        2,
        1,
        2,
        5,
        "TL019",
        "dataloader-workers-without-main-guard",
        "warning",
        "m",
        Fix("wrap", build=lambda editor: editor.wrap_in_main(moved, "main", [])),
        cell=1,
    )
    out, problems = make_edits(ctx, [finding], lambda f: True, CellMapper(program.index, program.source))
    assert out[0].fix is None
    assert problems == ["nb.ipynb:cell 1:2: TL019 fix skipped: it would change cells 1 and 3 together"]


def test_a_fix_that_makes_no_sense_in_a_notebook_is_not_offered_there():
    """TL019 does not report notebook code at all; were it to (a script pasted in a cell and
    linted under a script's name), its main-guard fix is still not offered for the cells."""
    script = "import torch\nfrom torch.utils.data import DataLoader\nfor x in DataLoader(torch.ones(8, 1), num_workers=2):\n    pass"
    program = parse_notebook(notebook_json(script))
    (as_script,) = lint_text(program.source, "s.py", edits=True).findings
    (in_cells,) = lint_text(program.source, "s.py", notebook=program.index, edits=True).findings
    assert (as_script.code, in_cells.code) == ("TL019", "TL019")
    assert as_script.fix is not None and in_cells.fix is None
    assert "Not offered in notebooks:" in fix_for("TL019").docs()


def test_a_fix_that_would_leave_a_cell_unparsable_is_skipped_and_said_so(tmp_path):
    path = write_notebook(tmp_path / "nb.ipynb", "import torch", "x = torch.ones(3)\ny = x + 1")
    program, ctx = program_context(path)
    stmt = ctx.tree.body[2]

    def finding(code):
        return Finding(
            "nb.ipynb",
            2,
            1,
            2,
            5,
            "TL008",
            "view-after-permute",
            "error",
            "m",
            Fix("d", build=lambda editor: editor.insert_before(stmt, code)),
            cell=2,
        )

    out, problems = make_edits(
        ctx, [finding("return 1"), finding("z = 0")], lambda f: True, CellMapper(program.index, program.source)
    )
    assert problems == [
        "nb.ipynb:cell 2:2: TL008 fix skipped: cell 2 would not compile: 'return' outside function (line 2)"
    ]
    assert out[0].fix is None
    assert [e.to_dict() for e in out[1].fix.edits] == [
        {"cell": 2, "line": 2, "column": 1, "end_line": 2, "end_column": 1, "text": "z = 0\n"}
    ]


def test_diff_shows_each_changed_cell_and_writes_nothing(tmp_path):
    path = write_notebook(
        tmp_path / "nb.ipynb",
        "import torch",
        markdown("## Model"),
        VIEW_CELL,
        "x = torch.ones(2, 3)\ny = x.permute(1, 0).view(-1)",
    )
    before = path.read_bytes()
    run = run_cli(["check", "nb.ipynb", "--diff"])
    assert run.code == 1 and path.read_bytes() == before
    assert run.out == textwrap.dedent(
        """\
        --- nb.ipynb:cell 3
        +++ nb.ipynb:cell 3
        @@ -1,4 +1,4 @@
         def flatten(conv, x):
             feat = conv(x)
             n, c, h, w = feat.shape
        -    return feat.permute(0, 2, 3, 1).view(n, h, w * c)
        +    return feat.permute(0, 2, 3, 1).reshape(n, h, w * c)
        --- nb.ipynb:cell 4
        +++ nb.ipynb:cell 4
        @@ -1,2 +1,2 @@
         x = torch.ones(2, 3)
        -y = x.permute(1, 0).view(-1)
        +y = x.permute(1, 0).reshape(-1)
        """
    )
    assert run.err == "Would fix 2 findings in 1 file.\n"


def test_fix_on_standard_input_prints_the_fixed_notebook(tmp_path):
    text = notebook_json("import torch", VIEW_CELL)
    run = run_cli(["check", "-", "--fix", "--stdin-filename", "nb.ipynb"], stdin=text.encode())
    assert run.code == 0
    assert run.out == text.replace(".view(n,", ".reshape(n,")
    assert "Fixed 1 finding in 1 file." in run.err


def test_one_string_sources_and_crlf_files_are_written_back_the_same_way(tmp_path):
    text = notebook_json("import torch", VIEW_CELL.replace("\n", "\r\n"), one_string_sources=True)
    path = tmp_path / "nb.ipynb"
    path.write_bytes(text.replace("\n", "\r\n").encode())
    run_cli(["check", "nb.ipynb", "--fix"])
    expected = text.replace(".view(n,", ".reshape(n,").replace("\n", "\r\n").encode()
    assert path.read_bytes() == expected
    assert '"source": "def flatten(conv, x):\\r\\n' in path.read_text()


def test_plain_lint_of_a_notebook_imports_no_libcst(tmp_path):
    """Neither libcst nor the notebook fix machinery is loaded to mark a notebook's fixes."""
    write_notebook(tmp_path / "nb.ipynb", "import torch", VIEW_CELL)
    code = (
        "import sys\nfrom torchlint.cli import main\nrc = main(['check', 'nb.ipynb'])\n"
        "print(rc, 'libcst' in sys.modules, 'torchlint.engine.notebookfix' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert run.stdout.strip().endswith("1 False False"), run.stdout + run.stderr
    assert "TL008 [*]" in run.stdout


def test_fixed_notebook_is_valid_for_nbformat(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    path = tutorial(tmp_path)
    run_cli(["check", path.name, "--fix", "--unsafe-fixes"])
    nbformat.validate(nbformat.read(str(path), as_version=4))


@pytest.mark.parametrize(
    "text, code, warning",
    [
        ('{"cells": [', "TL000", ""),
        (
            notebook_json("import torch", VIEW_CELL).replace('"metadata": {}', '"metadata": {"scale": NaN}', 1),
            "TL008",
            "torchlint: warning: nb.ipynb: not fixed: its JSON holds values (NaN, Infinity?) that cannot be rewritten\n",
        ),
    ],
)
def test_a_notebook_that_cannot_be_rewritten_is_reported_and_left_alone(tmp_path, text, code, warning):
    path = tmp_path / "nb.ipynb"
    path.write_text(text)
    run = run_cli(["check", "nb.ipynb", "--fix", "-q"])
    assert run.code == 1 and path.read_text() == text
    assert run.out.startswith("nb.ipynb:") and f" {code} " in run.out
    assert run.err == warning
