"""Every fix, through the real engine: each fix's examples give exactly their expected fixed source
(Fixit style); every fix is idempotent, leaves a file that compiles, and removes its finding;
the rules' own INVALID examples too; fixes that overlap are applied in rounds."""

import textwrap

import pytest
from expect_markers import assert_marked

from torchlint.engine.autofix import FixOptions, fix_text
from torchlint.engine.fixers import all_fixes
from torchlint.engine.lint import lint_text
from torchlint.engine.rule import all_rules

RULES = all_rules()
FIXES = all_fixes()


def fix(source, rules, unsafe=True):
    """(fixed source, fixes applied by code, problems) after --fix [--unsafe-fixes]."""
    outcome = fix_text(
        source,
        "example.py",
        lambda text, wanted: lint_text(text, "example.py", rules, edits=wanted),
        FixOptions(unsafe=unsafe),
    )
    return outcome.text, dict(outcome.fixed), outcome.problems


def findings(source, rules, codes):
    return [f for f in lint_text(source, "example.py", rules, edits=True).findings if f.code in codes]


def _examples():
    seen = set()
    for fixer in FIXES.values():
        if id(fixer) in seen:
            continue
        seen.add(id(fixer))
        name = "-".join(fixer.codes)
        for index, (before, after) in enumerate(fixer.EXAMPLES):
            yield pytest.param(fixer, textwrap.dedent(before), textwrap.dedent(after), id=f"{name}-{index}")


def assert_sound_fix(fixed, rules, codes):
    """The fixed source compiles, fixing it again changes nothing, and its rules find nothing."""
    compile(fixed, "example.py", "exec")
    again, applied, _ = fix(fixed, rules)
    assert again == fixed and not applied, "the fix is not idempotent"
    assert findings(fixed, rules, codes) == []


@pytest.mark.parametrize("fixer,before,after", list(_examples()))
def test_fix_examples_give_their_fixed_source(fixer, before, after):
    rules = [RULES[code] for code in fixer.codes]
    found = findings(before, rules, fixer.codes)
    assert_marked(found, before, fixer.codes)
    assert all(f.fix is not None and f.fix.edits for f in found), "every marked finding of an example has a fix"
    fixed, applied, problems = fix(before, rules)
    assert problems == []
    assert fixed == after
    assert sum(applied.values()) >= len(found)
    assert_sound_fix(fixed, rules, fixer.codes)


def test_every_fix_has_examples_and_docs():
    for code, fixer in FIXES.items():
        assert fixer.EXAMPLES, code
        docs = RULES[code].docs()
        assert "## Fix" in docs and all(kind in docs.split("## Fix")[1].lower() for kind in fixer.applicabilities)


def _invalid_examples():
    for code in FIXES:
        for index, source in enumerate(RULES[code].INVALID):
            yield pytest.param(code, textwrap.dedent(source), id=f"{code}-invalid-{index}")


@pytest.mark.parametrize("code,source", list(_invalid_examples()))
def test_fixes_of_the_rules_invalid_examples_are_sound(code, source):
    rules = [RULES[code]]
    before = findings(source, rules, {code})
    unfixable = [f for f in before if f.fix is None]
    fixed, applied, problems = fix(source, rules)
    assert problems == []
    assert applied.get(code, 0) == len(before) - len(unfixable)
    compile(fixed, "example.py", "exec")
    again, reapplied, _ = fix(fixed, rules)
    assert again == fixed and not reapplied
    assert len(findings(fixed, rules, {code})) == len(unfixable)
