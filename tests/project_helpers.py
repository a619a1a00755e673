"""Shared by the cross-file tests: a small project written into a temporary folder, and a
summary that asks for the summaries of the functions it calls (the shape of the real ones)."""

from __future__ import annotations

import ast
import textwrap

from torchlint.analysis.callgraph import resolve_call
from torchlint.analysis.summaries import function_summary

REACH = "test.reach"


def write(root, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def reach(definition) -> frozenset[str]:
    """The qualified names of the functions a function runs, transitively, in any file."""
    found = set()
    for node in ast.walk(definition.node):
        if isinstance(node, ast.Call):
            callee = resolve_call(definition.ctx, node)
            if callee is not None:
                found.add(callee.qualname)
                found |= function_summary(callee, REACH, reach, frozenset())
    return frozenset(found)


def lint_in_project(root, files: dict[str, str], target: str, code: str) -> list:
    """The ``code`` findings of ``target`` once ``files`` are written under ``root`` (a project
    with a ``pyproject.toml``), linted as the command lints it, its imports read from disk."""
    from torchlint.engine.lint import lint_file
    from torchlint.engine.rule import all_rules

    write(root, {"pyproject.toml": "", **files})
    return [f for f in lint_file(str(root / target), [all_rules()[code]]).findings if f.code == code]
