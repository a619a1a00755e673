"""Rule base class and the registry every rule joins.

A rule is a small class that carries its own documentation (in four parts, like
ruff's rule docs) and its own VALID and INVALID examples (like Fixit), which one
parametrized test runs for every registered rule. In INVALID examples, each line
that must be reported ends with a ``# expect: TLxxx`` comment.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from torchlint.engine.finding import SEVERITIES, Fix, Message
from torchlint.engine.fixers import fix_for

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

CODE_PATTERN = re.compile(r"^TL\d{3}$")
NAME_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Diagnostic:
    """What a rule reports: a node (or explicit span) and a message. The engine adds the rest.
    A :class:`Message` keeps the first line short and puts the why and the fix on lines of
    their own; a plain string is a message of one line."""

    node: ast.AST
    message: Message | str
    fix: Fix | None = None
    # What the rule found besides the node (the loop, the backward, the optimizer...), for its fix
    # (``torchlint/rules/fixes``): detection reports it, the fix decides what to do with it.
    evidence: object = None


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[str]
    summary: ClassVar[str]
    # Documentation in four parts: what it does, why it is bad, an example, what to write instead.
    what: ClassVar[str]
    why: ClassVar[str]
    example: ClassVar[str]
    instead: ClassVar[str]
    VALID: ClassVar[Sequence[str]] = ()
    INVALID: ClassVar[Sequence[str]] = ()

    def check(self, ctx: FileContext) -> Iterator[Diagnostic]:
        raise NotImplementedError

    def report(
        self, node: ast.AST, message: Message | str, fix: Fix | None = None, evidence: object = None
    ) -> Diagnostic:
        return Diagnostic(node, message, fix, evidence)

    @classmethod
    def docs(cls) -> str:
        """The full documentation, as `torchlint explain` prints it (Markdown)."""
        return "\n".join(
            [
                f"# {cls.code} {cls.name} ({cls.severity})",
                "",
                cls.summary,
                "",
                "## What it does",
                textwrap.dedent(cls.what).strip(),
                "",
                "## Why is this bad?",
                textwrap.dedent(cls.why).strip(),
                "",
                "## Example",
                "```python",
                textwrap.dedent(cls.example).strip("\n"),
                "```",
                "",
                "## Use instead",
                "```python",
                textwrap.dedent(cls.instead).strip("\n"),
                "```",
                "",
                "## Fix",
                cls.fix_docs(),
                "",
            ]
        )

    @classmethod
    def fix_docs(cls) -> str:
        """Whether `--fix` can fix this rule's findings, and whether that fix is safe."""
        fixer = fix_for(cls.code)
        if fixer is None:
            return "None: `--fix` leaves this one to you."
        return fixer.docs()


_REGISTRY: dict[str, type[Rule]] = {}


def register(cls: type[Rule]) -> type[Rule]:
    """Class decorator: validate a rule's metadata and add it to the registry."""
    for attr in ("code", "name", "severity", "summary", "what", "why", "example", "instead"):
        if not getattr(cls, attr, None):
            raise TypeError(f"rule {cls.__name__} lacks {attr!r}")
    if not CODE_PATTERN.match(cls.code):
        raise TypeError(f"rule {cls.__name__}: bad code {cls.code!r}")
    if not NAME_PATTERN.match(cls.name):
        raise TypeError(f"rule {cls.__name__}: name {cls.name!r} is not kebab-case")
    if cls.severity not in SEVERITIES:
        raise TypeError(f"rule {cls.__name__}: severity must be one of {SEVERITIES}")
    if cls.code in _REGISTRY and _REGISTRY[cls.code] is not cls:
        raise TypeError(f"rule code {cls.code} registered twice")
    _REGISTRY[cls.code] = cls
    return cls


def all_rules() -> dict[str, type[Rule]]:
    """Every registered rule, by code, in code order."""
    from .. import rules  # noqa: F401  (importing the package registers every rule module)

    return dict(sorted(_REGISTRY.items()))
