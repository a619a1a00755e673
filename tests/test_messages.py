"""Messages a person reads: a short first line (what is wrong, where), then the why and the fix
on lines of their own; the text report shows them under the code, the machine formats keep the
whole message."""

import json
import pathlib
import textwrap

import pytest
from cli_helpers import BUGGY, run_cli, write

from torchlint.engine.finding import Message
from torchlint.engine.lint import lint_source
from torchlint.engine.rule import all_rules

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
# The old one-line messages ran 200-350 characters; a first line stays well under that even when
# it quotes the user's code (`torch.autocast(device_type="cuda", dtype=torch.float16)`).
MAX_HEADLINE = 160


def every_rule_finding():
    """Each rule's INVALID examples, plus the bundled example scripts."""
    for code, rule in all_rules().items():
        for source in rule.INVALID:
            yield from (f for f in lint_source(textwrap.dedent(source), "example.py", [rule]) if f.code == code)
    for path in sorted(EXAMPLES.glob("*.py")):
        yield from lint_source(path.read_text(), path.name)


FINDINGS = list(every_rule_finding())


def test_the_examples_cover_every_rule():
    assert {f.code for f in FINDINGS} == set(all_rules())


@pytest.mark.parametrize("finding", FINDINGS, ids=lambda f: f"{f.code}-{f.line}")
def test_first_line_is_short_and_the_why_and_the_fix_follow(finding):
    assert len(finding.headline) <= MAX_HEADLINE, finding.headline
    assert not finding.headline.endswith((".", ":", ";")), finding.headline
    if finding.code == "TL000":  # the parser's own message says it all
        assert finding.details == []
        return
    assert [d.split(": ", 1)[0] for d in finding.details] == ["why", "help"], finding.message
    assert all(len(d) > len("help: ") + 10 for d in finding.details), finding.details


def test_full_message_is_the_lines_of_the_parts():
    assert str(Message("x is wrong at line 3", why="it breaks y", help="do z")) == (
        "x is wrong at line 3\nwhy: it breaks y\nhelp: do z"
    )
    assert str(Message("only a first line")) == "only a first line"
    assert str(Message("no why", help="do z")) == "no why\nhelp: do z"


@pytest.fixture
def buggy(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    write(tmp_path / "train.py", BUGGY)


def test_text_report_puts_the_why_and_the_fix_under_the_code(buggy):
    run = run_cli(["check", "train.py", "--select", "TL016"])
    assert run.out.splitlines()[:5] == [
        "train.py:5:9: TL016 [backward-under-no-grad] `loss.backward()` runs under `torch.no_grad()` (line 3)",
        "    5 |         loss.backward()",
        "      |         ^^^^^^^^^^^^^^^",
        "      = why: no autograd graph was recorded, so this backward raises or trains nothing",
        "      = help: move it out of the no-grad block",
    ]


def test_quiet_report_is_one_short_line_per_finding(buggy):
    run = run_cli(["check", "train.py", "--select", "TL016", "-q"])
    assert run.out == (
        "train.py:5:9: TL016 [backward-under-no-grad] `loss.backward()` runs under `torch.no_grad()` (line 3)\n"
    )


def test_machine_formats_keep_the_full_message(buggy):
    (finding,) = json.loads(run_cli(["check", "train.py", "--select", "TL016", "--format", "json"]).out)
    assert finding["message"] == (
        "`loss.backward()` runs under `torch.no_grad()` (line 3)\n"
        "why: no autograd graph was recorded, so this backward raises or trains nothing\n"
        "help: move it out of the no-grad block"
    )
    sarif = json.loads(run_cli(["check", "train.py", "--select", "TL016", "--format", "sarif"]).out)
    assert sarif["runs"][0]["results"][0]["message"]["text"] == finding["message"]
    github = run_cli(["check", "train.py", "--select", "TL016", "--format", "github"]).out
    assert github.rstrip("\n").endswith("::" + finding["message"].replace("\n", "%0A"))


def test_code_written_over_several_lines_is_quoted_on_one():
    # A call wrapped over lines (a formatter's output) reads as one line of the message, not as the
    # source's line breaks and alignment.
    source = """
        import torch

        def fit(model, loader, total_epochs):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for epoch in range(total_epochs):
                for inputs, targets in loader:
                    loss = torch.nn.functional.cross_entropy(model(inputs), targets)
                    loss.backward()
                    optimizer.step(
                    )
    """
    (finding,) = lint_source(textwrap.dedent(source), "train.py", [all_rules()["TL001"]])
    assert finding.headline == ("`optimizer.step()` applies gradients that are never cleared in the loop at line 7")
