"""Inline suppressions: # noqa, # noqa: CODES, # torchlint: disable=..., # torchlint: disable-file=..."""

import textwrap

import pytest

from torchlint.engine.lint import lint_source
from torchlint.engine.rule import all_rules

# Line 5 is a TL016 finding; {comment} goes at its end, {header} on line 1.
TEMPLATE = """\
import torch{header}
def train(model, opt, x, y):
    with torch.no_grad():
        loss = model(x).sub(y).pow(2).mean()
        loss.backward(){comment}
        opt.zero_grad()
"""


def findings(comment="", header=""):
    source = TEMPLATE.format(comment=comment, header=header)
    return [(f.line, f.code) for f in lint_source(source, "t.py", [all_rules()["TL016"]])]


def test_unsuppressed_baseline():
    assert findings() == [(5, "TL016")]


@pytest.mark.parametrize(
    "comment",
    [
        "  # noqa",
        "  # NOQA",
        "  #noqa",
        "  # noqa: TL016",
        "  # noqa:TL016",
        "  # noqa: E501, TL016",
        "  # noqa: TL01 -- prefix",
        "  # noqa: tl016",
        "  # torchlint: disable=TL016",
        "  # torchlint: disable=TL001,TL016",
        "  # torchlint: disable = TL001, TL016",
        "  # torchlint: disable=all",
        "  # torchlint: disable",
        "  # type: ignore  # noqa: TL016",
    ],
)
def test_comment_on_the_reported_line_suppresses(comment):
    assert findings(comment=comment) == []


@pytest.mark.parametrize(
    "comment",
    [
        "  # noqa: TL001",
        "  # noqa: E501",
        "  # noqa: TL0160",
        "  # torchlint: disable=TL001",
        "  # torchlint: disabled for now",
        "  # torchlint: disable-file=TL001",
        "  # see the noqa docs",
    ],
)
def test_other_codes_or_other_words_do_not_suppress(comment):
    assert findings(comment=comment) == [(5, "TL016")]


def test_comment_on_another_line_does_not_suppress():
    assert findings(header="  # noqa: TL016") == [(5, "TL016")]
    assert findings(header="  # torchlint: disable=TL016") == [(5, "TL016")]


@pytest.mark.parametrize(
    "header",
    [
        "  # torchlint: disable-file=TL016",
        "  # torchlint: disable-file=TL001, TL016",
        "  # torchlint: disable-file=TL0",
    ],
)
def test_disable_file_anywhere_suppresses_the_whole_file(header):
    assert findings(header=header) == []
    assert findings(comment=header) == []


def test_noqa_inside_a_string_is_not_a_comment():
    source = textwrap.dedent(
        """\
        import torch
        def train(model, opt, x, y):
            with torch.no_grad():
                loss = model(x).sub(y).pow(2).mean()
                loss.backward(); note = "# noqa"
        """
    )
    assert [f.line for f in lint_source(source, "t.py", [all_rules()["TL016"]])] == [5]


def test_disable_file_silences_a_syntax_error():
    source = "# torchlint: disable-file=TL000\ndef broken(:\n"
    assert lint_source(source, "t.py") == []
    assert [f.code for f in lint_source("def broken(:\n", "t.py")] == ["TL000"]
