"""Inline suppressions: ``# noqa``, ``# noqa: TL001``, ``# torchlint: disable=TL001,TL008``
on the reported line, and ``# torchlint: disable-file=TL003`` anywhere in the file.

Codes may be prefixes (``TL0``) or ``all``; a bare ``# noqa`` or ``# torchlint: disable``
suppresses every rule on its line. Comments are found with ``tokenize``, so a ``# noqa``
inside a string does not count.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

from torchlint.engine.finding import Finding

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.I)
_DISABLE = re.compile(
    r"#\s*torchlint:\s*disable(?P<file>-file)?(?:\s*=\s*(?P<codes>[A-Z]+[0-9]*(?:\s*,\s*[A-Z]+[0-9]*)*)|(?![\w=-]))",
    re.I,
)
ALL = "*"


def _codes(text: str | None) -> set[str]:
    if not text:
        return {ALL}
    codes = {c.strip().upper() for c in re.split(r"[\s,]+", text) if c.strip()}
    return {ALL if c == "ALL" else c for c in codes}


@dataclass
class Suppressions:
    by_line: dict[int, set[str]] = field(default_factory=dict)
    file_wide: set[str] = field(default_factory=set)

    @classmethod
    def from_source(cls, source: str) -> Suppressions:
        result = cls()
        # Cheap pre-check: most files have no suppression comment at all.
        lowered = source.lower()
        if "noqa" not in lowered and "torchlint:" not in lowered:
            return result
        for line, comment in _comments(source):
            for match in _NOQA.finditer(comment):
                codes = match.group("codes")
                result.by_line.setdefault(line, set()).update(_codes(codes))
            for match in _DISABLE.finditer(comment):
                target = result.file_wide if match.group("file") else result.by_line.setdefault(line, set())
                target.update(_codes(match.group("codes")))
        return result

    def suppresses(self, finding: Finding) -> bool:
        if _matches(finding.code, self.file_wide):
            return True
        return _matches(finding.code, self.by_line.get(finding.line, ()))


def _matches(code: str, codes) -> bool:
    return any(c == ALL or code == c or code.startswith(c) for c in codes)


def _comments(source: str):
    """(line, text) of every comment; falls back to a line scan if tokenizing fails."""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                yield tok.start[0], tok.string
    except (tokenize.TokenError, SyntaxError, IndentationError):
        for number, text in enumerate(re.split(r"\r\n|\r|\n", source), 1):
            if "#" in text:
                yield number, text[text.index("#") :]
