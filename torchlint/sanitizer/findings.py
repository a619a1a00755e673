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
    "TS115": "validation-in-train-mode",
    "TS116": "loss-shape-broadcast",
    "TS117": "loss-target-float64",
    "TS118": "loss-constant-no-gradient",
    "TS119": "sampler-epoch-not-set",
    "TS120": "ddp-parameter-without-gradient",
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
    #: The distributed rank of the process that saw it (None outside distributed runs).
    rank: int | None = None
    #: In a report gathered from several ranks: rank -> count there (empty otherwise).
    count_by_rank: dict[int, int] = field(default_factory=dict)

    @property
    def location(self) -> Location:
        return Location(self.filename, self.lineno, self.function)

    @property
    def ranks(self) -> list[int]:
        """The ranks that saw it: those of a gathered report, else this process's own."""
        if self.count_by_rank:
            return sorted(self.count_by_rank)
        return [] if self.rank is None else [self.rank]

    def rank_label(self) -> str:
        """``[rank 1] `` / ``[ranks 0,1] `` in front of messages; empty outside distributed runs."""
        ranks = self.ranks
        if not ranks:
            return ""
        return f"[rank{'s' if len(ranks) > 1 else ''} {','.join(map(str, ranks))}] "

    def format(self) -> str:
        times = f" (seen {self.count}x)" if self.count > 1 else ""
        return f"{self.filename}:{self.lineno}: {self.rank_label()}{self.code} {self.name}: {self.message}{times}"

    __str__ = format

    def to_dict(self) -> dict[str, Any]:
        data = {
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "filename": self.filename,
            "lineno": self.lineno,
            "function": self.function,
            "count": self.count,
            "rank": self.rank,
            "details": _jsonable(self.details),
        }
        if self.count_by_rank:
            data["ranks"] = self.ranks
            data["count_by_rank"] = {str(r): n for r, n in sorted(self.count_by_rank.items())}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        """The inverse of :meth:`to_dict` (details come back as JSON values)."""
        return cls(
            code=data["code"],
            name=data["name"],
            message=data["message"],
            filename=data["filename"],
            lineno=int(data["lineno"]),
            count=int(data.get("count", 1)),
            details=dict(data.get("details") or {}),
            function=data.get("function", "<unknown>"),
            rank=data.get("rank"),
            count_by_rank={int(r): int(n) for r, n in (data.get("count_by_rank") or {}).items()},
        )


class SanitizerWarning(UserWarning):
    """Issued once per distinct finding and location when ``action="warn"``."""

    def __init__(self, finding: Finding):
        super().__init__(f"{finding.rank_label()}{finding.code} {finding.name}: {finding.message}")
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
        #: This process's distributed rank and the world size (None outside
        #: distributed runs); new findings carry the rank.
        self.rank: int | None = None
        self.world_size: int | None = None
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
            rank=self.rank,
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
        data: dict[str, Any] = {"tool": "torchlint.sanitize", "version": 1}
        if self.rank is not None:
            data["rank"] = self.rank
            data["world_size"] = self.world_size
        data["findings"] = [f.to_dict() for f in self.findings]
        data["notes"] = list(self.notes)
        return data

    def write_json(self, path: str | os.PathLike) -> None:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(self.to_dict(), fh, indent=2)
            fh.write("\n")

    def scope(self) -> str:
        """`` [rank 1 of 2]`` after the tool's name in a distributed run's summary."""
        if self.rank is None:
            return ""
        return f" [rank {self.rank} of {self.world_size}]" if self.world_size else f" [rank {self.rank}]"

    def format_summary(self, color: bool = False) -> str:
        """The table printed on stderr at exit: code, name, (ranks,) count, first location."""
        bold, red, dim, reset = ("\x1b[1m", "\x1b[31m", "\x1b[2m", "\x1b[0m") if color else ("",) * 4
        lines = []
        title = f"torchlint.sanitize{self.scope()}"
        if not self.findings:
            lines.append(f"{bold}{title}:{reset} no findings")
        else:
            n = len(self.findings)
            lines.append(f"{bold}{title}: {n} finding{'s' if n != 1 else ''}{reset}")
            # A report gathered from several ranks says which ranks saw each finding.
            by_rank = any(f.count_by_rank for f in self.findings)
            rows = [
                (
                    f.code,
                    f.name,
                    *([",".join(map(str, f.ranks))] if by_rank else []),
                    str(f.count),
                    f"{f.filename}:{f.lineno}",
                    f.message,
                )
                for f in self.findings
            ]
            header = ("code", "name", *(["ranks"] if by_rank else []), "count", "first location", "")
            columns = len(header) - 1
            widths = [max(len(r[i]) for r in [header, *rows]) for i in range(columns)]
            aligns = ["<", "<", *(["<"] if by_rank else []), ">", "<"]
            fmt = "  ".join(f"{{:{a}{w}}}" for a, w in zip(aligns, widths))
            lines.append(dim + "  " + fmt.format(*header[:columns]) + reset)
            for row in rows:
                lines.append(red + "  " + fmt.format(*row[:columns]).rstrip() + reset)
                lines.append(f"      {dim}{_shorten(row[-1])}{reset}")
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
