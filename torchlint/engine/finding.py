"""The record every rule produces and every reporter consumes."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

ERROR = "error"
WARNING = "warning"
SEVERITIES = (ERROR, WARNING)


@dataclass(frozen=True)
class Edit:
    """Replace the source between two positions (1-based lines and columns) with ``text``."""

    line: int
    column: int
    end_line: int
    end_column: int
    text: str


@dataclass(frozen=True)
class Fix:
    """A suggested change: a human description and, where it is mechanical, the edits."""

    description: str
    edits: tuple[Edit, ...] = ()


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
    def headline(self) -> str:
        """The message's first line: what is wrong, and where."""
        return self.message.split("\n", 1)[0]

    @property
    def details(self) -> list[str]:
        """The lines after the first: why it matters, what to do."""
        return self.message.split("\n")[1:]

    def to_dict(self) -> dict:
        data = asdict(self)
        if self.fix is None:
            data["fix"] = None
        else:
            data["fix"] = {
                "description": self.fix.description,
                "edits": [asdict(edit) for edit in self.fix.edits],
            }
        return data
