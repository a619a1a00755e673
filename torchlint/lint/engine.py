"""Lint one source text: parse once, build the shared context, run the rules, apply suppressions."""

from __future__ import annotations

import ast
from typing import Iterable

from .context import FileContext
from .finding import Finding
from .rule import Rule, all_rules
from .suppress import Suppressions

SYNTAX_ERROR = ("TL000", "syntax-error", "error")


def _syntax_finding(path: str, line: int, column: int, message: str) -> Finding:
    code, name, severity = SYNTAX_ERROR
    return Finding(path, max(line, 1), max(column, 1), max(line, 1), max(column, 1), code, name, severity, message)


def lint_source(source: str, path: str = "<string>", rules: Iterable[type[Rule]] | None = None) -> list[Finding]:
    """All findings for one file's text, sorted by position, with inline suppressions applied."""
    rule_classes = list(all_rules().values()) if rules is None else list(rules)
    selected_codes = {r.code for r in rule_classes}
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        if SYNTAX_ERROR[0] not in selected_codes and rules is not None:
            return []
        return [_syntax_finding(path, exc.lineno or 1, exc.offset or 1, f"cannot parse: {exc.msg}")]
    ctx = FileContext(path, source, tree)
    findings: list[Finding] = []
    for rule_cls in rule_classes:
        rule = rule_cls()
        for diag in rule.check(ctx):
            line, col, end_line, end_col = ctx.span(diag.node)
            findings.append(
                Finding(path, line, col, end_line, end_col, rule.code, rule.name, rule.severity, diag.message, diag.fix)
            )
    suppressions = Suppressions.from_source(source)
    findings = [f for f in findings if not suppressions.suppresses(f)]
    findings = sorted(set(findings))
    return findings
