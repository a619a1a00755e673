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


@dataclass(frozen=True, order=True)
class Finding:
    """One problem at one place. Lines and columns are 1-based; end positions are exclusive."""

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
