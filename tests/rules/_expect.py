"""Shared by the TL001/TL002/TL009 tests: the lines a test source marks with ``# expect: TLxxx``."""

import re
import textwrap

_MARK = re.compile(r"#\s*expect:\s*(?P<codes>TL\d{3}(?:\s*,\s*TL\d{3})*)")


def expected_lines(source: str, code: str) -> list[int]:
    """1-based lines of the dedented ``source`` whose trailing comment expects ``code``."""
    found = []
    for number, line in enumerate(textwrap.dedent(source).splitlines(), 1):
        match = _MARK.search(line)
        if match and code in {c.strip() for c in match.group("codes").split(",")}:
            found.append(number)
    return found


def check(lint, source: str, code: str):
    """Lint ``source`` for ``code``; assert the findings sit exactly on the marked lines; return them."""
    findings = lint(source, code)
    assert [f.line for f in findings] == expected_lines(source, code), [f"{f.line}: {f.message}" for f in findings]
    return findings
