"""Every rule's examples, run through the real engine: the embedded VALID and INVALID examples,
and the published documentation (`torchlint explain`, the README): its Example must produce the
rule's finding and its Use instead must be clean, as written, so that the docs users read match
what the linter does."""

import textwrap

import pytest
from expect_markers import assert_marked, marked

from torchlint.engine.lint import lint_source
from torchlint.engine.rule import all_rules

RULES = all_rules()


def _cases(kind):
    for code, rule in RULES.items():
        for index, source in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, textwrap.dedent(source), id=f"{code}-{kind.lower()}-{index}")


def _findings(rule, source):
    return [f for f in lint_source(source, "example.py", [rule]) if f.code == rule.code]


@pytest.mark.parametrize("rule,source", list(_cases("VALID")))
def test_valid_examples_are_silent(rule, source):
    findings = _findings(rule, source)
    assert findings == [], [f"{f.line}: {f.message}" for f in findings]


@pytest.mark.parametrize("rule,source", list(_cases("INVALID")))
def test_invalid_examples_report_marked_lines(rule, source):
    assert marked(source), "an INVALID example must mark at least one line with '# expect: CODE'"
    findings = _findings(rule, source)
    assert_marked(findings, source, (rule.code,))
    for finding in findings:
        assert finding.name == rule.name and finding.severity == rule.severity
        assert finding.message.strip()


@pytest.mark.parametrize("code", list(RULES))
def test_every_rule_has_examples_and_docs(code):
    rule = RULES[code]
    assert len(rule.VALID) >= 1 and len(rule.INVALID) >= 1
    docs = rule.docs()
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
        assert heading in docs


@pytest.mark.parametrize("code", list(RULES))
def test_published_example_is_reported(code):
    rule = RULES[code]
    assert _findings(rule, textwrap.dedent(rule.example)), f"the documented Example of {code} gives no {code}"


@pytest.mark.parametrize("code", list(RULES))
def test_published_fix_is_clean(code):
    rule = RULES[code]
    findings = _findings(rule, textwrap.dedent(rule.instead))
    assert findings == [], [f"{f.line}: {f.message}" for f in findings]
