"""Jupyter notebooks: real .ipynb files on disk, linted through the command like ruff does."""

import json
import textwrap

import pytest
from cli_helpers import BUGGY, run_cli, write
from notebook_helpers import markdown, notebook_json, raw, write_notebook

from torchlint.engine import config

# TL016 on the line of `loss.backward()` (line 4 of the cell).
TRAIN_CELL = textwrap.dedent(
    """\
    def train(model, opt, x, y):
        with torch.no_grad():
            loss = model(x).sub(y).pow(2).mean()
            loss.backward()
            opt.zero_grad()"""
)


@pytest.fixture(autouse=True)
def _in_tmp(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    config.clear_cache()


def json_findings(*args):
    run = run_cli(["check", "--format", "json", *args])
    return run, json.loads(run.out)


def test_findings_are_located_by_cell_and_line_in_every_format(tmp_path):
    write_notebook(tmp_path / "nb.ipynb", markdown("# Training"), "import torch", TRAIN_CELL)
    run = run_cli(["check", "nb.ipynb", "--select", "TL016"])
    assert run.code == 1
    assert run.out.splitlines()[:3] == [
        "nb.ipynb:cell 3:4:9: TL016 [backward-under-no-grad] `loss.backward()` runs under `torch.no_grad()` (line 2)",
        "    4 |         loss.backward()",
        "      |         ^^^^^^^^^^^^^^^",
    ]

    _, (finding,) = json_findings("nb.ipynb", "--select", "TL016")
    assert (finding["cell"], finding["line"], finding["column"], finding["end_line"], finding["end_column"]) == (
        3,
        4,
        9,
        4,
        24,
    )

    # GitHub and SARIF annotate the file as stored: the line of the .ipynb text holding that code.
    raw_lines = (tmp_path / "nb.ipynb").read_text().splitlines()
    github = run_cli(["check", "nb.ipynb", "--select", "TL016", "--format", "github"]).out
    props = dict(item.split("=", 1) for item in github.split("::")[1].split(" ", 1)[1].split(","))
    line, column = int(props["line"]), int(props["col"])
    assert raw_lines[line - 1][column - 1 :].startswith("loss.backward()")
    assert props["title"] == "TL016 backward-under-no-grad (cell 3%2C line 4)"
    sarif = json.loads(run_cli(["check", "nb.ipynb", "--select", "TL016", "--format", "sarif"]).out)
    (result,) = sarif["runs"][0]["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (line, column)
    assert result["properties"] == {"cell": 3, "cellLine": 4, "cellColumn": 9}


def test_cells_are_one_program_in_order(tmp_path):
    """The optimizer is built in one cell and stepped in a loop of another: TL004 needs both."""
    write_notebook(
        tmp_path / "nb.ipynb",
        "import torch\nmodel = torch.nn.Linear(3, 1)",
        markdown("## Train"),
        "for x, y in loader:\n    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)\n"
        "    model(x).sum().backward()\n    opt.step()\n    opt.zero_grad()",
    )
    _, findings = json_findings("nb.ipynb")
    assert [(f["cell"], f["line"], f["code"]) for f in findings] == [(3, 2, "TL004")]
    # Lines the message refers to are given as the notebook shows them.
    assert "the loop at line 1" in findings[0]["message"]


def test_magics_and_shell_escapes_neither_crash_nor_shift_positions(tmp_path):
    write_notebook(
        tmp_path / "nb.ipynb",
        "!pip install torch\n%matplotlib inline\nfiles = !ls\nimport torch",
        "%%bash\necho this is not python (\n",
        "%%time\n" + TRAIN_CELL,
        "model?\n?model\n%time train(model, opt, x, y)\n%timeit -n 3 train(model, opt, x, y)",
        "for i in range(3):\n    !echo $i\n    %time step = i\nawait asyncio.sleep(0)",
    )
    run, findings = json_findings("nb.ipynb", "--select", "TL016,TL000")
    assert [(f["cell"], f["line"], f["column"], f["code"]) for f in findings] == [(3, 5, 9, "TL016")]
    assert run.err == ""


def test_a_finding_on_a_time_magic_line_keeps_the_cells_columns(tmp_path):
    write_notebook(
        tmp_path / "nb.ipynb",
        "import torch",
        "with torch.no_grad():\n    loss = model(x).sum()\n    %time loss.backward()",
    )
    run = run_cli(["check", "nb.ipynb", "--select", "TL016"])
    assert run.out.splitlines()[:3] == [
        "nb.ipynb:cell 2:3:11: TL016 [backward-under-no-grad] `loss.backward()` runs under `torch.no_grad()` (line 1)",
        "    3 |     %time loss.backward()",
        "      |           ^^^^^^^^^^^^^^^",
    ]


def test_suppressions_apply_per_cell(tmp_path):
    cells = ["import torch", TRAIN_CELL, TRAIN_CELL.replace("train", "train_again")]
    noqa = TRAIN_CELL.replace("loss.backward()", "loss.backward()  # noqa: TL016")
    write_notebook(tmp_path / "line.ipynb", cells[0], noqa, cells[2])
    write_notebook(tmp_path / "cell.ipynb", cells[0], "# torchlint: disable-cell=TL016\n" + cells[1], cells[2])
    write_notebook(tmp_path / "file.ipynb", "# torchlint: disable-file=TL016\n" + cells[0], cells[1], cells[2])
    _, findings = json_findings(".", "--select", "TL016")
    assert [(f["path"], f["cell"], f["line"]) for f in findings] == [("cell.ipynb", 3, 4), ("line.ipynb", 3, 4)]


def test_disable_cell_outside_a_notebook_is_a_warning(tmp_path):
    write(tmp_path / "train.py", "# torchlint: disable-cell=TL016\n" + BUGGY)
    run = run_cli(["check", "train.py", "--select", "TL016", "-q"])
    assert run.code == 1
    assert run.err == (
        "torchlint: warning: train.py:1: `# torchlint: disable-cell=TL016` applies only in notebooks (.ipynb);"
        " use `disable` or `disable-file`\n"
    )


def test_an_unknown_code_in_a_notebook_is_located_by_cell(tmp_path):
    write_notebook(tmp_path / "nb.ipynb", "import torch", "x = 1\ny = 2  # torchlint: disable=TL0166")
    run = run_cli(["check", "nb.ipynb"])
    assert run.err.startswith("torchlint: warning: nb.ipynb:cell 2:2: `# torchlint: disable=TL0166`: unknown rule")


@pytest.mark.parametrize(
    "text, words",
    [
        ('{"cells": [', "invalid JSON at line 1"),
        ("", "invalid JSON"),
        ('{"nbformat": 4}', "no list of `cells`"),
        ('{"cells": [{"cell_type": "code", "source": 3}]}', "cell 1 has a `source` that is not text"),
    ],
)
def test_a_broken_notebook_is_one_tl000_finding(tmp_path, text, words):
    write(tmp_path / "nb.ipynb", text)
    write(tmp_path / "train.py", BUGGY)
    run, findings = json_findings(".", "--select", "TL016")
    assert run.code == 1 and run.err == ""
    assert [(f["path"], f["code"], f["line"]) for f in findings] == [("nb.ipynb", "TL000", 1), ("train.py", "TL016", 5)]
    assert words in findings[0]["message"] and findings[0]["message"].startswith("not a valid notebook")


def test_a_cell_that_does_not_parse_is_reported_there_and_the_others_are_linted(tmp_path):
    write_notebook(tmp_path / "nb.ipynb", "import torch", "def broken(:\n    pass", TRAIN_CELL)
    _, findings = json_findings("nb.ipynb", "--select", "TL016")
    assert [(f["cell"], f["line"], f["code"]) for f in findings] == [(2, 1, "TL000"), (3, 4, "TL016")]
    assert "this cell is left out" in findings[0]["message"]


def test_a_notebook_without_code_cells_is_a_warning(tmp_path):
    write_notebook(tmp_path / "notes.ipynb", markdown("# Only notes"), raw("raw text"))
    run = run_cli(["check", "notes.ipynb"])
    assert (run.code, run.out) == (0, "No findings (1 file checked)\n")
    assert run.err == "torchlint: warning: notes.ipynb: no code cells to lint\n"


def test_a_notebook_in_another_language_is_skipped_with_a_warning(tmp_path):
    write_notebook(tmp_path / "r.ipynb", "library(ggplot2)\nx <- c(1, 2)", language="R")
    run = run_cli(["check", "r.ipynb"])
    assert run.code == 0 and "TL000" not in run.out
    assert run.err == "torchlint: warning: r.ipynb: skipped: a r notebook, not a Python one\n"


def test_sources_written_as_one_string_are_read_too(tmp_path):
    write_notebook(tmp_path / "nb.ipynb", "import torch", TRAIN_CELL, one_string_sources=True)
    _, findings = json_findings("nb.ipynb", "--select", "TL016")
    assert [(f["cell"], f["line"], f["column"]) for f in findings] == [(2, 4, 9)]


def test_directories_include_notebooks_but_not_checkpoints_and_config_applies(tmp_path):
    write_notebook(tmp_path / "a.ipynb", "import torch", TRAIN_CELL)
    write_notebook(tmp_path / ".ipynb_checkpoints" / "a-checkpoint.ipynb", "import torch", TRAIN_CELL)
    write_notebook(tmp_path / "drafts" / "old.ipynb", "import torch", TRAIN_CELL)
    write(tmp_path / "b.py", BUGGY)
    write(tmp_path / "c.pyw", BUGGY)
    _, findings = json_findings(".", "--select", "TL016")
    assert sorted({f["path"] for f in findings}) == ["a.ipynb", "b.py", "drafts/old.ipynb"]

    write(tmp_path / "pyproject.toml", '[tool.torchlint]\nextend-exclude = ["drafts"]\nextend-include = ["*.pyw"]\n')
    config.clear_cache()
    _, findings = json_findings(".", "--select", "TL016")
    assert sorted({f["path"] for f in findings}) == ["a.ipynb", "b.py", "c.pyw"]

    write(tmp_path / "pyproject.toml", '[tool.torchlint]\ninclude = ["*.py"]\n')
    config.clear_cache()
    _, findings = json_findings(".", "--select", "TL016")
    assert sorted({f["path"] for f in findings}) == ["b.py"]


def test_a_notebook_on_standard_input(tmp_path):
    text = notebook_json("import torch", TRAIN_CELL)
    run = run_cli(["check", "-", "--stdin-filename", "nb.ipynb", "-q", "--select", "TL016"], stdin=text.encode())
    assert run.out.startswith("nb.ipynb:cell 2:4:9: TL016")


def test_a_notebook_with_large_saved_outputs_is_not_skipped_for_its_size(tmp_path):
    text = json.loads(notebook_json("import torch", TRAIN_CELL))
    picture = {"data": {"image/png": "iVBORw0KGgo" * 200_000}, "metadata": {}, "output_type": "display_data"}
    text["cells"][0]["outputs"] = [picture]
    (tmp_path / "plots.ipynb").write_text(json.dumps(text, indent=1))
    assert (tmp_path / "plots.ipynb").stat().st_size > 2_000_000
    run, findings = json_findings("plots.ipynb", "--select", "TL016")
    assert [(f["cell"], f["line"]) for f in findings] == [(2, 4)] and run.err == ""
