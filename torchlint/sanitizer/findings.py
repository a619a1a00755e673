"""Findings, the report, and the exception/warning classes of the sanitizer.

This module never imports torch, so the public names can be imported (and
tested) cheaply.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, NamedTuple

#: Public runtime check codes and their kebab-case names.
CHECK_NAMES: dict[str, str] = {
    "TS100": "sanitizer-notice",
    "TS101": "autograd-anomaly",
    "TS102": "device-mismatch",
    "TS103": "dtype-mismatch",
    "TS104": "nonfinite-input",
    "TS105": "inplace-on-autograd-tensor",
    "TS106": "grads-not-cleared",
    "TS107": "param-not-in-optimizer",
    "TS108": "param-never-updated",
    "TS109": "training-in-eval-mode",
    "TS110": "eval-forward-with-grad",
    "TS111": "nonfinite-grad",
    "TS112": "optimizer-not-stepped",
    "TS113": "loss-scale-collapse",
}


class Location(NamedTuple):
    """A place in the user's code: the file, line and function of a frame."""

    filename: str
    lineno: int
    function: str = "<module>"

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}"


UNKNOWN_LOCATION = Location("<unknown>", 0, "<unknown>")


@dataclass
class Finding:
    """One distinct problem at one place in the user's code.

    Findings are deduplicated by ``(code, filename, lineno)``; ``count`` says
    how many times the problem was seen there.  ``details`` holds
    check-specific, JSON-serialisable facts (devices, dtypes, argument
    names, a trimmed forward stack...).
    """

    code: str
    name: str
    message: str
    filename: str
    lineno: int
    count: int = 1
    details: dict[str, Any] = field(default_factory=dict)
    function: str = "<unknown>"

    @property
    def location(self) -> Location:
        return Location(self.filename, self.lineno, self.function)

    def format(self) -> str:
        times = f" (seen {self.count}x)" if self.count > 1 else ""
        return f"{self.filename}:{self.lineno}: {self.code} {self.name}: {self.message}{times}"

    __str__ = format

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "filename": self.filename,
            "lineno": self.lineno,
            "function": self.function,
            "count": self.count,
            "details": _jsonable(self.details),
        }


class SanitizerWarning(UserWarning):
    """Issued once per distinct finding and location when ``action="warn"``."""

    def __init__(self, finding: Finding):
        super().__init__(f"{finding.code} {finding.name}: {finding.message}")
        self.finding = finding


class SanitizerError(Exception):
    """Raised at the first finding when ``action="raise"``.

    Not a RuntimeError on purpose: training loops often catch RuntimeError
    (out-of-memory retries), which must not swallow the sanitizer's stop.
    """

    def __init__(self, finding: Finding):
        super().__init__(finding.format())
        self.finding = finding


class Report:
    """Everything one ``sanitize()`` session found, in order of first sight."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        #: Informational lines that are not findings (e.g. "compiled regions
        #: are not inspected").
        self.notes: list[str] = []
        self._by_key: dict[tuple[str, str, int], Finding] = {}

    # -- collection -------------------------------------------------------
    def add(
        self,
        code: str,
        name: str,
        message: str,
        location: Location,
        details: dict[str, Any] | None = None,
        count: int = 1,
    ) -> tuple[Finding, bool]:
        """Record one occurrence; return ``(finding, is_new)``."""
        key = (code, location.filename, location.lineno)
        finding = self._by_key.get(key)
        if finding is not None:
            finding.count += count
            return finding, False
        finding = Finding(
            code=code,
            name=name,
            message=message,
            filename=location.filename,
            lineno=location.lineno,
            count=count,
            details=dict(details or {}),
            function=location.function,
        )
        self._by_key[key] = finding
        self.findings.append(finding)
        return finding, True

    def merge(self, other: Report) -> None:
        """Fold the findings of a nested session into this one."""
        for f in other.findings:
            self.add(f.code, f.name, f.message, f.location, f.details, count=f.count)
        for note in other.notes:
            if note not in self.notes:
                self.notes.append(note)

    # -- queries ----------------------------------------------------------
    def __iter__(self):
        return iter(self.findings)

    def __len__(self) -> int:
        return len(self.findings)

    def codes(self) -> set[str]:
        return {f.code for f in self.findings}

    def by_code(self, code: str) -> list[Finding]:
        return [f for f in self.findings if f.code == code]

    # -- output -----------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": "torchlint.sanitize",
            "version": 1,
            "findings": [f.to_dict() for f in self.findings],
            "notes": list(self.notes),
        }

    def write_json(self, path: str | os.PathLike) -> None:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(self.to_dict(), fh, indent=2)
            fh.write("\n")

    def format_summary(self, color: bool = False) -> str:
        """The table printed on stderr at exit: code, name, count, first location."""
        bold, red, dim, reset = ("\x1b[1m", "\x1b[31m", "\x1b[2m", "\x1b[0m") if color else ("",) * 4
        lines = []
        if not self.findings:
            lines.append(f"{bold}torchlint.sanitize:{reset} no findings")
        else:
            n = len(self.findings)
            lines.append(f"{bold}torchlint.sanitize: {n} finding{'s' if n != 1 else ''}{reset}")
            rows = [(f.code, f.name, str(f.count), f"{f.filename}:{f.lineno}", f.message) for f in self.findings]
            header = ("code", "name", "count", "first location", "")
            widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
            fmt = "  {{:<{}}}  {{:<{}}}  {{:>{}}}  {{:<{}}}".format(*widths)
            lines.append(dim + fmt.format(*header[:4]) + reset)
            for row in rows:
                lines.append(red + fmt.format(*row[:4]).rstrip() + reset)
                lines.append(f"      {dim}{_shorten(row[4])}{reset}")
        for note in self.notes:
            lines.append(f"  note: {note}")
        return "\n".join(lines)


def _shorten(text: str, limit: int = 160) -> str:
    first = text.splitlines()[0] if text else ""
    return first if len(first) <= limit else first[: limit - 3] + "..."


def _jsonable(value: Any) -> Any:
    """Details may hold torch objects (devices, dtypes); stringify what JSON can't hold."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)
