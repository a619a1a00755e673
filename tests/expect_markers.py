"""The one parser of ``# expect:`` markers, shared by every test that checks which lines a rule reports.

A test source marks each line that must be reported with a comment at its end:
``# expect: TL001``, or ``# expect: TL001, TL004`` for several rules on one line. The
line of a finding is the first line of the statement or expression reported, so a marker
sits on that line. Rule tests (tests/rules), the bundled examples (examples/), the red-team
corpus (tests/corpus) and the rules' own INVALID examples all use this one format.
"""

from __future__ import annotations

import re

MARKER = re.compile(r"#\s*expect:\s*(?P<codes>TL\d{3}(?:\s*,\s*TL\d{3})*)")


def marked(source: str) -> set[tuple[int, str]]:
    """Every ``(line, code)`` pair the markers of ``source`` ask for (lines are 1-based;
    dedenting a source does not move its lines)."""
    pairs = set()
    for number, line in enumerate(source.split("\n"), 1):
        match = MARKER.search(line)
        if match:
            pairs.update((number, code.strip()) for code in match.group("codes").split(","))
    return pairs


def describe(findings) -> str:
    return "\n".join(f"{f.line}: {f.code} {f.message}" for f in findings)


def assert_marked(findings, source: str, codes=()) -> None:
    """The findings sit exactly on the marked lines (of ``codes``, when given) with the marked codes."""
    expected = {pair for pair in marked(source) if not codes or pair[1] in codes}
    got = {(f.line, f.code) for f in findings}
    missed, extra = sorted(expected - got), sorted(got - expected)
    assert not missed and not extra, f"missed={missed} extra={extra}\n{describe(findings)}"


def check(lint, source: str, *codes: str):
    """Lint ``source`` for ``codes`` (every rule when none) with the ``lint`` fixture, assert the
    findings are exactly the marked ones, and return them (in position order) for checks on messages."""
    findings = lint(source, *codes)
    assert_marked(findings, source, codes)
    return findings
