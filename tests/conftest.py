import textwrap

import pytest

from torchlint.engine.lint import lint_source
from torchlint.engine.rule import all_rules


def lint_text(source, *codes, path="train.py"):
    """Findings for ``source`` (dedented), restricted to ``codes`` when given."""
    registry = all_rules()
    rules = [registry[c] for c in codes] if codes else None
    findings = lint_source(textwrap.dedent(source), path, rules)
    if codes:
        findings = [f for f in findings if f.code in codes]
    return findings


@pytest.fixture
def lint():
    """``lint(source, "TL001")`` -> findings of TL001 for the dedented source."""
    return lint_text
