"""The documented `Example` of TL008/TL010/TL011/TL012/TL013/TL020 is reported and the
`Use instead` is silent: the docs users read must match what the linter does."""

import textwrap

import pytest

from torchlint.engine.lint import lint_source
from torchlint.engine.rule import all_rules

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
# Loop snippets need a function around them to have parameters.
WRAPPED = {"TL010": "def train(model, loader, criterion, optimizer):\n"}


def _source(code, snippet):
    body = textwrap.dedent(snippet)
    if code in WRAPPED:
        return HEADER + WRAPPED[code] + textwrap.indent(body, "    ")
    return HEADER + body


@pytest.mark.parametrize("code", ["TL008", "TL010", "TL011", "TL012", "TL013", "TL020"])
def test_documented_example_is_reported_and_fix_is_silent(code):
    rule = all_rules()[code]
    assert [f for f in lint_source(_source(code, rule.example), "doc.py", [rule]) if f.code == code]
    assert [f for f in lint_source(_source(code, rule.instead), "doc.py", [rule]) if f.code == code] == []
