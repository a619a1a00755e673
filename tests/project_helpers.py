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
