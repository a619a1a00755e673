"""The bundled examples: each buggy line is marked ``# expect: CODE[, CODE]``; the
linter must report exactly those (line, code) pairs, and nothing on the clean script."""

import json
import pathlib

import pytest
from expect_markers import assert_marked, marked

from torchlint.engine.lint import lint_file, lint_source

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.py")), ids=lambda p: p.name)
def test_example_findings_match_markers(path):
    source = path.read_text()
    assert_marked(lint_source(source, str(path)), source)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.ipynb")), ids=lambda p: p.name)
def test_example_notebook_findings_match_markers_cell_by_cell(path):
    cells = json.loads(path.read_text())["cells"]
    expected = {
        (number, line, code)
        for number, cell in enumerate(cells, 1)
        if cell["cell_type"] == "code"
        for line, code in marked("".join(cell["source"]))
    }
    found = {(f.cell, f.line, f.code) for f in lint_file(str(path)).findings}
    assert found == expected


def test_buggy_examples_cover_many_rules():
    codes = set()
    for path in EXAMPLES.glob("*_buggy.py"):
        codes |= {code for _, code in marked(path.read_text())}
    assert len(list(EXAMPLES.glob("*_buggy.ipynb"))) == 1
    assert len(codes) >= 18
    assert not marked((EXAMPLES / "clean_train.py").read_text())
