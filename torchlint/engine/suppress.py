"""Inline suppressions: ``# noqa``, ``# noqa: TL001``, ``# torchlint: disable=TL001,TL008``
on the reported line, ``# torchlint: disable-file=TL003`` anywhere in the file, and in a
notebook ``# torchlint: disable-cell=TL005`` anywhere in a cell (for that cell only).

Codes may be prefixes (``TL0``) or ``all``, and ``# torchlint: disable=`` also takes rule
names (``missing-zero-grad``); a bare ``# noqa`` or ``# torchlint: disable`` suppresses every
rule on its line. Comments are found with ``tokenize``, so a ``# noqa`` inside a string does
not count. A code that names no rule (``# torchlint: disable=TL999``, or a ``TL`` code in a
``# noqa`` -- other tools' codes there are theirs) is kept in ``Suppressions.unknown`` so the
run can warn instead of silently suppressing nothing.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from torchlint.engine.config import normalize_code, unknown_code_message
from torchlint.engine.finding import Finding, location

if TYPE_CHECKING:
    from torchlint.engine.notebook import NotebookIndex

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.I)
_DISABLE = re.compile(
    r"#\s*torchlint:\s*disable(?P<scope>-file|-cell)?"
    r"(?:\s*=\s*(?P<codes>[A-Z][\w-]*(?:\s*,\s*[A-Z][\w-]*)*)|(?![\w=-]))",
    re.I,
)
ALL = "*"


@dataclass
class Suppressions:
    by_line: dict[int, set[str]] = field(default_factory=dict)
    file_wide: set[str] = field(default_factory=set)
    # (line, the comment's directive, the code as written) for codes that name no rule.
    unknown: list[tuple[int, str, str]] = field(default_factory=list)
    # Lines of `disable-cell` comments outside a notebook, where there are no cells.
    misplaced: list[tuple[int, str]] = field(default_factory=list)

    def _codes(self, text: str | None, line: int, directive: str, ours: bool) -> set[str]:
        """The codes of one comment; unknown ones are recorded (``ours``: every code is a
        torchlint code; else only ``TL`` codes are, as in ``# noqa: E501, TL001``)."""
        if not text:
            return {ALL}
        codes = set()
        for raw in (c.strip() for c in re.split(r"[\s,]+", text)):
            if not raw:
                continue
            code = normalize_code(raw)
            if code is None:
                if ours or raw.upper().startswith("TL"):
                    self.unknown.append((line, directive, raw))
                code = raw.upper()
            codes.add(ALL if code == "ALL" else code)
        return codes

    @classmethod
    def from_source(cls, source: str, notebook: NotebookIndex | None = None) -> Suppressions:
        """The suppressions of a file, or of a notebook's joined cells (``notebook``)."""
        result = cls()
        # Cheap pre-check: most files have no suppression comment at all.
        lowered = source.lower()
        if "noqa" not in lowered and "torchlint:" not in lowered:
            return result
        for line, comment in _comments(source):
            for match in _NOQA.finditer(comment):
                codes = result._codes(match.group("codes"), line, match.group(0), ours=False)
                result.by_line.setdefault(line, set()).update(codes)
            for match in _DISABLE.finditer(comment):
                codes = result._codes(match.group("codes"), line, match.group(0), ours=True)
                scope = (match.group("scope") or "").lower()
                if scope == "-file":
                    result.file_wide.update(codes)
                elif scope == "-cell":
                    cell_lines = notebook.cell_lines(notebook.locate(line)[0]) if notebook is not None else None
                    if cell_lines is None:
                        result.misplaced.append((line, match.group(0)))
                        continue
                    for number in range(cell_lines[0], cell_lines[1] + 1):
                        result.by_line.setdefault(number, set()).update(codes)
                else:
                    result.by_line.setdefault(line, set()).update(codes)
        return result

    def problems(self, path: str, notebook: NotebookIndex | None = None) -> list[str]:
        """One warning per code that names no rule, and per `disable-cell` outside a notebook."""

        def where(line: int) -> str:
            return location(path, *notebook.locate(line)) if notebook is not None else location(path, None, line)

        warnings = [
            f"{where(line)}: `{directive.strip()}`: {unknown_code_message(raw)}"
            for line, directive, raw in self.unknown
        ]
        warnings += [
            f"{where(line)}: `{directive.strip()}` applies only in notebooks (.ipynb); use `disable` or `disable-file`"
            for line, directive in self.misplaced
        ]
        return warnings

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
