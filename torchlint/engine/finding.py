"""The record every rule produces and every reporter consumes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

# The rule reference: one generated page per rule (engine/ruledocs.py), linked from every finding.
RULES_DOCS_FOLDER = "docs/rules"


def rule_page(code: str, name: str) -> str:
    """The file name of a rule's page: ``TL001-missing-zero-grad.md``."""
    return f"{code}-{name}.md"


def rule_url(code: str, name: str) -> str:
    from torchlint import __url__

    return f"{__url__}/blob/main/{RULES_DOCS_FOLDER}/{rule_page(code, name)}"


ERROR = "error"
WARNING = "warning"
SEVERITIES = (ERROR, WARNING)

# How much a fix may be trusted (the names follow ruff). A safe fix removes the bug and changes
# nothing else that the code computes; `--fix` applies it. An unsafe fix relies on something the
# linter infers but cannot prove (where a statement belongs, how a value is used elsewhere, that a
# loop continues one run) or changes more than the bug; only `--unsafe-fixes` applies it.
SAFE = "safe"
UNSAFE = "unsafe"
APPLICABILITIES = (SAFE, UNSAFE)


@dataclass(frozen=True)
class Edit:
    """Replace the source between two positions (1-based lines and columns, end exclusive) with ``text``.
    An insertion has equal start and end. In a notebook, ``cell`` is the cell (counted as findings
    count them) and the positions are lines and columns of that cell's source."""

    line: int
    column: int
    end_line: int
    end_column: int
    text: str
    cell: int | None = None

    def to_dict(self) -> dict:
        data = asdict(self)
        cell = data.pop("cell")
        return data if cell is None else {"cell": cell, **data}  # a plain file's edits have no cell


@dataclass(frozen=True)
class Fix:
    """A change that removes a finding: a human description, its applicability and the edits.

    Rules decide a fix from the ``ast`` alone, cheaply, and hand the engine ``build``: a function
    that makes the edits with the libcst toolkit (``torchlint.engine.cstedit``). The engine calls
    it only when edits are wanted (``--fix``, ``--diff``, the JSON and SARIF reports), so a plain
    lint never imports libcst; ``build`` never leaves the process that linted the file."""

    description: str
    edits: tuple[Edit, ...] = ()
    applicability: str = SAFE
    build: Callable | None = field(default=None, compare=False, repr=False)

    @property
    def safe(self) -> bool:
        return self.applicability == SAFE

    def to_dict(self) -> dict:
        return {
            "description": self.description,
            "applicability": self.applicability,
            "edits": [edit.to_dict() for edit in self.edits],
        }


class FixError(Exception):
    """A fix cannot be made here; the message says why (the engine reports it and skips the fix)."""


@dataclass(frozen=True)
class Message:
    """What a rule says about one finding, laid out for people as ruff and rustc do: ``text``
    is the first line and short -- what is wrong, and where; ``why`` (what goes wrong because
    of it) and ``help`` (what to write instead) follow on lines of their own. ``str()`` is the
    full message, the form ``Finding.message`` and every output format keep."""

    text: str
    why: str = ""
    help: str = ""

    def __str__(self) -> str:
        lines = [self.text]
        if self.why:
            lines.append(f"{WHY}{self.why}")
        if self.help:
            lines.append(f"{HELP}{self.help}")
        return "\n".join(lines)


def location(path: str, cell: int | None, line: int, column: int | None = None) -> str:
    """``train.py:12:5``, or in a notebook ``nb.ipynb:cell 4:12:5`` (as ruff writes it)."""
    where = f"{path}:{line}" if cell is None else f"{path}:cell {cell}:{line}"
    return where if column is None else f"{where}:{column}"


# How the detail lines of a full message begin.
WHY = "why: "
HELP = "help: "


@dataclass(frozen=True, order=True)
class Finding:
    """One problem at one place. Lines and columns are 1-based; end positions are exclusive.
    ``message`` is the full message: its first line says what is wrong and where, the lines
    after it (``why: ...``, ``help: ...``) why that matters and what to do."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    name: str = field(compare=False)
    severity: str = field(compare=False)
    message: str = field(compare=False)
    fix: Fix | None = field(default=None, compare=False)
    # In a notebook: the cell (1-based, counting every cell); ``line`` and ``end_line`` are then
    # lines of that cell. None in a plain file.
    cell: int | None = None

    @property
    def url(self) -> str:
        """The rule's documentation page."""
        return rule_url(self.code, self.name)

    @property
    def headline(self) -> str:
        """The message's first line: what is wrong, and where."""
        return self.message.split("\n", 1)[0]

    @property
    def details(self) -> list[str]:
        """The lines after the first: why it matters, what to do."""
        return self.message.split("\n")[1:]

    @classmethod
    def from_dict(cls, data: dict) -> Finding:
        """The inverse of to_dict (the cache stores findings as JSON)."""
        fix = data.get("fix")
        if fix is not None:  # its edits as they were made (a cached fix cannot build more)
            fix = Fix(fix["description"], tuple(Edit(**edit) for edit in fix["edits"]), fix["applicability"])
        names = cls.__dataclass_fields__  # "url" is derived, not stored
        return cls(**{key: value for key, value in data.items() if key in names and key != "fix"}, fix=fix)

    def to_dict(self) -> dict:
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["fix"] = None if self.fix is None else self.fix.to_dict()
        data["url"] = self.url
        return data
