"""Which statements of a block can run: none after an unconditional jump out of it.

A ``return``, ``raise``, ``continue`` or ``break`` leaves its block, so the statements after it in
the same block never run (``def test(self): return`` left at the top of a function disables the rest
of its body). Dead statements make no events, no findings and no part of a function's summary: the
file index leaves them out (``FileContext.nodes``) and the event walk stops at the jump.
Nothing here knows about PyTorch.
"""

from __future__ import annotations

import ast

# Statements after which nothing else of their block runs.
EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
# The fields of a node that hold a block of statements.
BLOCK_FIELDS = frozenset({"body", "orelse", "finalbody"})


def live_length(block: list) -> int:
    """How many statements at the start of ``block`` can run: up to and including the first
    unconditional jump (all of them when there is none)."""
    for index, stmt in enumerate(block):
        if isinstance(stmt, EXITS):
            return index + 1
    return len(block)


def live_statements(block: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of ``block`` that can run (``live_length``)."""
    length = live_length(block)
    return block if length == len(block) else block[:length]
