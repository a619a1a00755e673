"""Output formats: text (for people), json (for scripts), github (workflow commands), sarif (code scanning).

Every reporter takes the per-file results of a run and writes to a text stream.
The machine formats never contain anything but their document, so a summary or
statistics for them go to stderr.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from torchlint import __url__
from torchlint.engine.finding import ERROR, Finding, location, rule_url

if TYPE_CHECKING:
    from torchlint.engine.lint import FileResult

FORMATS = ("text", "json", "github", "sarif")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = __url__


@dataclass
class ReportOptions:
    color: bool = False
    quiet: bool = False
    statistics: bool = False
    files_checked: int | None = None  # None: the results that were not skipped
    unsafe_fixes: bool = False  # unsafe fixes count as applicable ("[*]")
    fixing: bool = False  # --fix ran: say what was fixed
    show_fixes: bool = False  # list the fixes applied per file and rule


def all_findings(results: Sequence[FileResult]) -> list[Finding]:
    return [f for r in results for f in r.findings]


def file_region(result: FileResult, finding: Finding) -> tuple[int, int, int, int]:
    """(line, column, end line, end column) in the file itself, for formats that annotate the
    file as stored (GitHub, SARIF): in a notebook, where the cell's line sits in the .ipynb JSON."""
    if finding.cell is None or result.notebook is None:
        return finding.line, finding.column, finding.end_line, finding.end_column
    line, column = result.notebook.raw_position(finding.cell, finding.line, finding.column)
    end_line, end_column = result.notebook.raw_position(finding.cell, finding.end_line, finding.end_column)
    return line, column, end_line, end_column


# ----- text -----------------------------------------------------------------------------------


class _Palette:
    """ANSI styles from colorama, or empty strings when colour is off."""

    def __init__(self, enabled: bool):
        if enabled:
            import colorama

            if os.name == "nt" and hasattr(colorama, "just_fix_windows_console"):  # pragma: no cover
                colorama.just_fix_windows_console()
            fore, style = colorama.Fore, colorama.Style
            self.bold, self.dim, self.reset = style.BRIGHT, style.DIM, style.RESET_ALL
            self.error, self.warning, self.ok, self.accent = fore.RED, fore.YELLOW, fore.GREEN, fore.CYAN
        else:
            self.bold = self.dim = self.reset = self.error = self.warning = self.ok = self.accent = ""

    def severity(self, severity: str) -> str:
        return self.error if severity == ERROR else self.warning


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


FIXABLE_MARK = "[*]"


def _applicable(finding: Finding, unsafe: bool) -> bool:
    """A fix ``--fix`` would apply (with ``--unsafe-fixes`` when ``unsafe``)."""
    return finding.fix is not None and (finding.fix.safe or unsafe)


def fix_counts(findings: Sequence[Finding], unsafe: bool) -> tuple[int, int]:
    """(fixes --fix would apply, more that only --unsafe-fixes would)."""
    applicable = sum(_applicable(f, unsafe) for f in findings)
    hidden = sum(f.fix is not None and not _applicable(f, unsafe) for f in findings)
    return applicable, hidden


def _fix_hint(findings: Sequence[Finding], unsafe: bool, fixing: bool) -> str | None:
    applicable, hidden = fix_counts(findings, unsafe)
    more = f"{hidden} more with `--unsafe-fixes`" if hidden else ""
    if applicable and not fixing:
        flag = "--fix --unsafe-fixes" if unsafe else "--fix"
        return f"{FIXABLE_MARK} {applicable} fixable with `torchlint {flag}`" + (f" ({more})" if more else "")
    if more:
        return f"{_plural(hidden, 'fix')} available with `--fix --unsafe-fixes`"
    return None


def fixed_summary(results: Sequence[FileResult], show: bool) -> list[str]:
    """``Fixed 3 findings in 2 files.`` and, when ``show``, one line per file and rule."""
    fixed = [(r.path, r.fixed) for r in results if r.fixed]
    total = sum(sum(counts.values()) for _, counts in fixed)
    if not total:
        return ["No fixes applied."] if show else []
    lines = [f"Fixed {_plural(total, 'finding')} in {_plural(len(fixed), 'file')}."]
    if show:
        for path, counts in fixed:
            lines.append(f"  {path}:")
            lines.extend(f"    {n} x {code}" for code, n in sorted(counts.items()))
    return lines


def write_fix_summary(results: Sequence[FileResult], stream: TextIO, show: bool = False) -> None:
    for line in fixed_summary(results, show):
        stream.write(line + "\n")


def _snippet(line_text: str, finding: Finding) -> tuple[str, int, int]:
    """The line with tabs expanded, and where the caret run starts and how long it is."""
    prefix = line_text[: finding.column - 1]
    shown = line_text.expandtabs(4)
    start = len(prefix.expandtabs(4))
    if finding.end_line == finding.line and finding.end_column > finding.column:
        end = len(line_text[: finding.end_column - 1].expandtabs(4))
    else:  # a multi-line node: underline to the end of its first line
        end = len(shown.rstrip())
    return shown, start, max(1, end - start)


def report_text(results: Iterable[FileResult], stream: TextIO, options: ReportOptions) -> None:
    """Writes each file's findings as soon as its result arrives (results may be a generator),
    then the statistics and the summary."""
    p = _Palette(options.color)
    findings: list[Finding] = []
    done: list[FileResult] = []
    checked = 0
    for result in results:
        checked += not result.skipped
        done.append(result)
        for f in result.findings:
            findings.append(f)
            sev = p.severity(f.severity)
            where = location(f.path, f.cell, f.line, f.column)
            mark = f"{FIXABLE_MARK} " if _applicable(f, options.unsafe_fixes) else ""
            stream.write(
                f"{p.bold}{f.path}{p.reset}{where[len(f.path) :]}: {sev}{p.bold}{f.code}{p.reset} "
                f"{mark}{p.dim}[{f.name}]{p.reset} {f.headline}\n"
            )
            if options.quiet:
                continue
            line_text = result.line_text(f)
            if line_text is not None and line_text.strip():
                shown, start, width = _snippet(line_text, f)
                gutter = str(f.line)
                stream.write(f"{p.dim}{gutter:>5} |{p.reset} {shown}\n")
                stream.write(f"{p.dim}{'':>5} |{p.reset} {' ' * start}{sev}{'^' * width}{p.reset}\n")
            # The why and the fix under the code, as rustc's notes: `      = help: call ...`.
            for detail in f.details:
                stream.write(f"{'':>5} {p.accent}={p.reset} {detail}\n")
        if result.findings:
            stream.flush()
    if options.statistics:
        _write_statistics(findings, stream, p)
    if options.quiet:
        return
    checked = options.files_checked if options.files_checked is not None else checked
    fixed = fixed_summary(done, options.show_fixes) if options.fixing else []
    if fixed:
        stream.write("\n" + "\n".join(fixed) + "\n")
    if findings:
        files = len({f.path for f in findings})
        errors = sum(f.severity == ERROR for f in findings)
        detail = f"{_plural(errors, 'error')}, {_plural(len(findings) - errors, 'warning')}"
        left = " left" if options.fixing else ""
        stream.write(
            f"\n{p.bold}{_plural(len(findings), 'finding')}{left} in {_plural(files, 'file')}{p.reset}"
            f" ({detail}; {_plural(checked, 'file')} checked)\n"
        )
        hint = _fix_hint(findings, options.unsafe_fixes, options.fixing)
        if hint:
            stream.write(hint + "\n")
    else:
        stream.write(f"{p.ok}No findings{p.reset} ({_plural(checked, 'file')} checked)\n")


def statistics(findings: Sequence[Finding]) -> list[tuple[str, str, int]]:
    """(code, name, count) per rule, most frequent first."""
    names = {f.code: f.name for f in findings}
    counts = Counter(f.code for f in findings)
    return [(code, names[code], n) for code, n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]


def _write_statistics(findings: Sequence[Finding], stream: TextIO, p: _Palette | None = None) -> None:
    p = p or _Palette(False)
    rows = statistics(findings)
    if not rows:
        return
    width = max(len(str(n)) for _, _, n in rows)
    stream.write("\n")
    for code, name, n in rows:
        stream.write(f"{n:>{width}}  {p.bold}{code}{p.reset}  {name}\n")


def write_statistics(results: Sequence[FileResult], stream: TextIO) -> None:
    _write_statistics(all_findings(results), stream)


# ----- json -----------------------------------------------------------------------------------


def report_json(results: Sequence[FileResult], stream: TextIO, options: ReportOptions) -> None:
    """A JSON array of findings; each has path, line, column, end_line, end_column (1-based,
    end exclusive), code, name, severity, message and fix (null, or {description, applicability
    ("safe" or "unsafe"), edits: [{line, column, end_line, end_column, text}], each edit in a
    notebook with its ``cell`` first)."""
    json.dump([f.to_dict() for f in all_findings(results)], stream, indent=2, ensure_ascii=False)
    stream.write("\n")


# ----- GitHub Actions workflow commands -------------------------------------------------------


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def report_github(results: Sequence[FileResult], stream: TextIO, options: ReportOptions) -> None:
    for result in results:
        for f in result.findings:
            command = "error" if f.severity == ERROR else "warning"
            line, column, end_line, end_column = file_region(result, f)
            title = f"{f.code} {f.name}" if f.cell is None else f"{f.code} {f.name} (cell {f.cell}, line {f.line})"
            props = [
                f"file={_escape_property(f.path)}",
                f"line={line}",
                f"col={column}",
                f"endLine={end_line}",
                f"endColumn={end_column}",
                f"title={_escape_property(title)}",
            ]
            stream.write(f"::{command} {','.join(props)}::{_escape_data(f.message)}\n")


# ----- SARIF 2.1.0 ----------------------------------------------------------------------------


def _artifact_uri(path: str) -> dict:
    """Relative URIs (from the working directory, i.e. the repository root in CI) so code
    scanning can place results; absolute file URIs for anything outside it."""
    from urllib.parse import quote

    absolute = Path(os.path.abspath(path))
    try:
        rel = absolute.relative_to(Path(os.getcwd()))
    except ValueError:
        return {"uri": absolute.as_uri()}
    return {"uri": quote(rel.as_posix()), "uriBaseId": "%SRCROOT%"}


def sarif_document(results: Sequence[FileResult], rules: Sequence[type]) -> dict:
    from .. import __version__

    rule_index = {rule.code: index for index, rule in enumerate(rules)}
    descriptors = [
        {
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": " ".join(rule.what.split())},
            "help": {"text": " ".join(rule.why.split()), "markdown": rule.docs()},
            "helpUri": rule_url(rule.code, rule.name),
            "defaultConfiguration": {"level": "error" if rule.severity == ERROR else "warning"},
            "properties": {"tags": ["pytorch", "correctness"]},
        }
        for rule in rules
    ]
    sarif_results = []
    for file_result in results:
        for f in file_result.findings:
            line, column, end_line, end_column = file_region(file_result, f)
            result = {
                "ruleId": f.code,
                "level": "error" if f.severity == ERROR else "warning",
                "message": {"text": f.message},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": _artifact_uri(f.path),
                            "region": {
                                "startLine": line,
                                "startColumn": column,
                                "endLine": end_line,
                                "endColumn": max(end_column, column),
                            },
                        }
                    }
                ],
            }
            if f.cell is not None:  # where a notebook viewer shows it
                result["properties"] = {"cell": f.cell, "cellLine": f.line, "cellColumn": f.column}
            if f.code in rule_index:
                result["ruleIndex"] = rule_index[f.code]
            fix = _sarif_fix(file_result, f) if f.fix is not None and f.fix.edits else None
            if fix is not None:
                result["fixes"] = [fix]
            sarif_results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "torchlint",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": descriptors,
                    }
                },
                # Our columns count characters (code points), not UTF-16 units.
                "columnKind": "unicodeCodePoints",
                "originalUriBaseIds": {"%SRCROOT%": {"uri": Path(os.getcwd()).as_uri() + "/"}},
                "results": sarif_results,
            }
        ],
    }


def _sarif_fix(file_result: FileResult, f: Finding) -> dict | None:
    """A SARIF fix: the edits as replacements of regions of the finding's file. In a notebook the
    regions are those of the ``.ipynb`` text and the inserted text is written as it stands inside
    a JSON string there (the cell's own positions and text are in each replacement's properties);
    None when the file's text could not be followed."""
    replacements = []
    for e in f.fix.edits:
        region = {"startLine": e.line, "startColumn": e.column, "endLine": e.end_line, "endColumn": e.end_column}
        replacement = {"deletedRegion": region, "insertedContent": {"text": e.text}}
        if e.cell is not None:
            index = file_result.notebook
            start = index.exact_raw_position(e.cell, e.line, e.column) if index is not None else None
            end = index.exact_raw_position(e.cell, e.end_line, e.end_column) if index is not None else None
            if start is None or end is None:
                return None
            replacement = {
                "deletedRegion": {
                    "startLine": start[0],
                    "startColumn": start[1],
                    "endLine": end[0],
                    "endColumn": end[1],
                },
                "insertedContent": {"text": json.dumps(e.text, ensure_ascii=False)[1:-1]},
                "properties": {"cell": e.cell, "cellRegion": region, "cellText": e.text},
            }
        replacements.append(replacement)
    return {
        "description": {"text": f.fix.description},
        "artifactChanges": [{"artifactLocation": _artifact_uri(f.path), "replacements": replacements}],
        "properties": {"applicability": f.fix.applicability},
    }


def report_sarif(results: Sequence[FileResult], stream: TextIO, options: ReportOptions, rules=()) -> None:
    json.dump(sarif_document(results, rules), stream, indent=2, ensure_ascii=False)
    stream.write("\n")


REPORTERS: dict[str, Callable] = {
    "text": report_text,
    "json": report_json,
    "github": report_github,
    "sarif": report_sarif,
}
