"""Jupyter notebooks (``.ipynb``) as one Python program, and the way back to cells.

The code cells, in order, are joined into one program so that a model built in cell 2 and
trained in cell 5 is analysed like one script. IPython syntax is neutralised line by line so
that it neither crashes the parser nor shifts any position: a line magic or shell escape
(``%matplotlib inline``, ``!pip install x``, ``files = !ls``, ``model?``) becomes ``pass`` (or
``name = None``) at the same indentation; ``%time stmt`` keeps ``stmt`` (its columns are
shifted back when reported); a cell magic whose body is Python (``%%time``, ``%%capture``)
only loses its first line, and any other (``%%bash``, ``%%writefile``) leaves the whole cell
out. A cell that still does not parse is reported (``TL000`` at its own cell and line) and
left out, so the other cells are still linted.

Positions come back as (cell, line in the cell), with cells counted from 1 over *all* cells
of the notebook, markdown included, as ruff does: ``nb.ipynb:cell 4:12:5``. For formats that
annotate the file itself (GitHub, SARIF) :class:`NotebookIndex` also knows where each
source line sits in the ``.ipynb`` JSON text.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import astuple, dataclass, field

# Cell magics whose body is Python that the kernel runs (the first line is the magic).
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "memit", "debug", "pdb"})
# Line magics followed by a Python statement that runs: `%time model.fit(x)`.
STATEMENT_MAGICS = frozenset({"time", "timeit", "prun", "memit", "debug"})
_ASSIGNED_ESCAPE = re.compile(r"^(\s*[\w.,\s\[\]()*]+?=\s*)[!%]")
_MAGIC_NAME = re.compile(r"%+(\w+)")
_LINE_REFERENCE = re.compile(r"\bline (\d+)\b")


class NotebookError(Exception):
    """The file is not a notebook we can lint; the message says why in one line."""


@dataclass(frozen=True)
class CellSpan:
    """Where one code cell sits in the joined program."""

    cell: int  # 1-based, counting every cell of the notebook
    first_line: int  # the program line of the cell's first line
    line_count: int
    # The cell's source ends with a newline (in the program every line does; fixes keep the cell's way).
    newline_at_end: bool = False
    # False for a cell left out of the program (`%%bash`, a cell that does not parse): only blank
    # lines stand for it, and no fix may put code there.
    python: bool = True


@dataclass
class NotebookIndex:
    """Maps program lines back to cells, and cell lines to the ``.ipynb`` text; small and picklable."""

    cells: list[CellSpan] = field(default_factory=list)
    # program line -> how many columns the neutralised line lost at its start (`%time `)
    column_shifts: dict[int, int] = field(default_factory=dict)
    # program line -> the cell's own text, for the lines neutralisation changed
    original_lines: dict[int, str] = field(default_factory=dict)
    # (cell, line in cell) -> anchors (column in the cell's line, line and column in the .ipynb
    # text) in order: one where each JSON string holding part of the line starts, and one after
    # each escaped character (`\"`, `\t`, `\u00e9`), so any column maps exactly to the file.
    raw_anchors: dict[tuple[int, int], list[tuple[int, int, int]]] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "cells": [list(astuple(span)) for span in self.cells],
            "column_shifts": [[line, shift] for line, shift in self.column_shifts.items()],
            "original_lines": [[line, text] for line, text in self.original_lines.items()],
            "raw_anchors": [[*key, [list(anchor) for anchor in value]] for key, value in self.raw_anchors.items()],
        }

    @classmethod
    def from_json(cls, data: dict) -> NotebookIndex:
        return cls(
            [CellSpan(*span) for span in data["cells"]],
            {line: shift for line, shift in data["column_shifts"]},
            {line: text for line, text in data["original_lines"]},
            {(cell, line): [tuple(anchor) for anchor in anchors] for cell, line, anchors in data["raw_anchors"]},
        )

    def locate(self, line: int) -> tuple[int, int]:
        """(cell, line in the cell) of a program line."""
        for span in self.cells:
            if span.first_line <= line < span.first_line + span.line_count:
                return span.cell, line - span.first_line + 1
        last = self.cells[-1] if self.cells else CellSpan(1, 1, 1)
        return last.cell, max(1, line - last.first_line + 1)

    def cell_lines(self, cell: int) -> tuple[int, int] | None:
        """The first and last program line of a cell."""
        for span in self.cells:
            if span.cell == cell:
                return span.first_line, span.first_line + span.line_count - 1
        return None

    def localize(self, message: str, cell: int) -> str:
        """Rewrite the program lines a message refers to (``line 39``, outside code in
        backticks) as the notebook shows them: ``line 2`` in the finding's own cell, else
        ``cell 10, line 2``."""
        parts = message.split("`")
        for i in range(0, len(parts), 2):  # the even parts are outside backticks
            parts[i] = _LINE_REFERENCE.sub(lambda m: self._line_reference(int(m.group(1)), cell), parts[i])
        return "`".join(parts)

    def _line_reference(self, line: int, cell: int) -> str:
        other, in_cell = self.locate(line)
        return f"line {in_cell}" if other == cell else f"cell {other}, line {in_cell}"

    def raw_position(self, cell: int, line: int, column: int) -> tuple[int, int]:
        """Line and column in the ``.ipynb`` file of a position in a cell (GitHub annotates the file)."""
        return self.exact_raw_position(cell, line, column) or (1, 1)

    def exact_raw_position(self, cell: int, line: int, column: int) -> tuple[int, int] | None:
        """The same, or None when the file's text could not be followed (not plain JSON)."""
        anchors = self.raw_anchors.get((cell, line))
        if not anchors:
            return None
        anchor = anchors[0]
        for candidate in anchors:  # the last anchor at or before the column
            if candidate[0] > column:
                break
            anchor = candidate
        anchor_column, raw_line, raw_column = anchor
        return raw_line, raw_column + column - anchor_column


@dataclass
class NotebookProgram:
    """A notebook's code cells as one Python program, plus the index back to the cells."""

    source: str
    index: NotebookIndex
    # (cell, line in cell, column, message) for each code cell left out because it does not parse
    broken_cells: list[tuple[int, int, int, str]] = field(default_factory=list)
    language: str = "python"


def parse_notebook(text_of_file: str) -> NotebookProgram:
    """The program of a notebook's text; NotebookError when it is not a notebook at all."""
    try:
        data = json.loads(text_of_file)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"not a valid notebook: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise NotebookError("not a valid notebook: no list of `cells` (is it an nbformat 4 .ipynb file?)")
    program = NotebookProgram("", NotebookIndex(), language=_language(data))
    lines: list[str] = []
    for number, cell in enumerate(data["cells"], 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        text = cell_text(cell.get("source", ""), number)
        cell_lines = text.split("\n")
        if cell_lines[-1] == "":
            cell_lines.pop()
        code, shifts, broken = _neutralise(cell_lines)
        python = broken is None and not _foreign(cell_lines)
        if broken is not None:
            program.broken_cells.append((number, *broken))
            code = [""] * len(cell_lines)
        if not code:
            continue
        first = len(lines) + 1
        program.index.cells.append(CellSpan(number, first, len(code), text.endswith("\n"), python))
        for offset, shift in shifts.items():
            program.index.column_shifts[first + offset] = shift
        for offset, (original, neutral) in enumerate(zip(cell_lines, code)):
            if original != neutral:
                program.index.original_lines[first + offset] = original
        lines.extend(code)
    program.source = "\n".join(lines) + ("\n" if lines else "")
    program.index.raw_anchors = _raw_source_anchors(text_of_file)
    return program


def code_cell_count(program: NotebookProgram) -> int:
    return len(program.index.cells) + len(program.broken_cells)


def _language(data: dict) -> str:
    metadata = data.get("metadata")
    if not isinstance(metadata, dict):
        return "python"
    for key, field_name in (("language_info", "name"), ("kernelspec", "language")):
        value = metadata.get(key)
        if isinstance(value, dict) and isinstance(value.get(field_name), str):
            return value[field_name].lower()
    return "python"


def cell_text(source, number: int) -> str:
    """A cell's source as one text with ``\\n`` line ends (nbformat allows a list of lines or one string)."""
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        source = "".join(source)
    if not isinstance(source, str):
        raise NotebookError(f"not a valid notebook: cell {number} has a `source` that is not text")
    return source.replace("\r\n", "\n").replace("\r", "\n")


def _foreign(lines: list[str]) -> bool:
    """A cell whose first line is a cell magic that runs something other than Python (`%%bash`)."""
    first = lines[0].strip() if lines else ""
    if not first.startswith("%%"):
        return False
    match = _MAGIC_NAME.match(first)
    return not match or match.group(1) not in PYTHON_CELL_MAGICS


def _parses(lines: list[str]) -> SyntaxError | None:
    try:
        compile("\n".join(lines) + "\n", "<cell>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError as exc:
        return exc
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
        return SyntaxError(str(exc))
    return None


def _neutralise(lines: list[str]) -> tuple[list[str], dict[int, int], tuple[int, int, str] | None]:
    """(the cell's lines as Python, {line offset: columns lost}, None) -- or, for a cell that is
    not Python even then, its lines and the (line, column, message) of the syntax error."""
    if not lines:
        return [], {}, None
    if _foreign(lines):
        return [""] * len(lines), {}, None  # %%bash, %%writefile, ...: not Python
    if lines[0].strip().startswith("%%"):  # %%time, %%capture: the body is Python
        lines = [""] + lines[1:]
    if _parses(lines) is None:
        return list(lines), {}, None
    code, shifts = [], {}
    for offset, line in enumerate(lines):
        replaced, shift = _neutralise_line(line)
        code.append(replaced)
        if shift:
            shifts[offset] = shift
    error = _parses(code)
    if error is None:
        return code, shifts, None
    return code, shifts, (error.lineno or 1, error.offset or 1, f"cannot parse: {error.msg}")


def _neutralise_line(line: str) -> tuple[str, int]:
    """IPython-only syntax on one line as Python with the same indentation: (line, columns lost)."""
    stripped = line.lstrip()
    indent = line[: len(line) - len(stripped)]
    if stripped.startswith(("%", "!")):
        match = _MAGIC_NAME.match(stripped)
        if match and not stripped.startswith("%%") and match.group(1) in STATEMENT_MAGICS:
            statement = stripped[match.end() :].lstrip()
            if statement and not statement.startswith("-"):  # `%timeit -n 3 f()`: options, leave it
                return indent + statement, len(line) - len(indent) - len(statement)
        return indent + "pass", 0
    if stripped.startswith("?") or (stripped.endswith("?") and "#" not in stripped):
        return indent + "pass", 0  # `?model`, `model.forward??`: help
    assigned = _ASSIGNED_ESCAPE.match(line)
    if assigned:
        return assigned.group(1) + "None", 0  # `files = !ls`, `out = %sx ls`
    return line, 0


# ----- where each source line sits in the .ipynb text -----------------------------------------

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_SCALAR = re.compile(r"-?[0-9][0-9.eE+-]*|true|false|null")
# An escape inside a JSON string: `\uXXXX` (a surrogate pair is two of them) or `\` and one character.
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)


def _raw_source_anchors(text: str) -> dict[tuple[int, int], list[tuple[int, int, int]]]:
    """The anchors of :attr:`NotebookIndex.raw_anchors`, found by a small JSON walk that keeps
    offsets (the json module does not); empty when the text is not plain JSON."""
    recorder = _SourceRecorder(text)
    try:
        walk_json(text, recorder.value)
    except (ValueError, IndexError):
        return {}
    # Offsets to lines and columns in one pass (a notebook is mostly saved outputs: megabytes).
    where, line, last = {}, 1, 0
    for offset in sorted({offset for found in recorder.anchors.values() for _, offset in found}):
        line += text.count("\n", last, offset)
        where[offset] = (line, offset - text.rfind("\n", 0, offset))
        last = offset
    return {key: [(column, *where[offset]) for column, offset in found] for key, found in recorder.anchors.items()}


class _SourceRecorder:
    """Follows the strings at ("cells", i, "source"[, j]) character by character."""

    def __init__(self, text: str):
        self.text = text
        self.anchors: dict[tuple[int, int], list[tuple[int, int]]] = {}
        self.at: dict[int, tuple[int, int]] = {}  # cell -> (line, column) where its next source part starts

    def value(self, path: tuple, start: int, end: int) -> None:
        if not is_source_path(path) or self.text[start] != '"':
            return
        cell = path[1] + 1
        line, column = self.at.get(cell, (1, 1))
        self._anchor(cell, line, column, start + 1)
        plain = start + 1  # where the run of unescaped characters since the last escape began
        for match in _ESCAPE.finditer(self.text, start + 1, end - 1):
            if match.start() < plain:  # the low half of a surrogate pair, already taken
                continue
            column += match.start() - plain
            plain = match.end()
            escaped = match.group(0)[1]
            if escaped == "u" and 0xD800 <= int(match.group(1), 16) < 0xDC00:
                pair = _ESCAPE.match(self.text, plain, end - 1)
                if pair and pair.group(1) and 0xDC00 <= int(pair.group(1), 16) < 0xE000:
                    plain = pair.end()
            if escaped == "r" and self.text.startswith("\\n", plain):
                continue  # \r\n is one line end: the \n ends the line
            if escaped in "nr":
                line, column = line + 1, 1
            else:
                column += 1
            self._anchor(cell, line, column, plain)
        self.at[cell] = (line, column + end - 1 - plain)

    def _anchor(self, cell: int, line: int, column: int, offset: int) -> None:
        found = self.anchors.setdefault((cell, line), [])
        while found and found[-1][0] == column:  # a later string holding the same place wins
            found.pop()
        found.append((column, offset))


def is_source_path(path: tuple) -> bool:
    """Whether a JSON path is a cell's `source`, or one of its strings."""
    if len(path) < 3 or path[0] != "cells" or not isinstance(path[1], int) or path[2] != "source":
        return False
    return len(path) == 3 or (len(path) == 4 and isinstance(path[3], int))


def walk_json(text: str, visit) -> None:
    """Walk the JSON document ``text``, calling ``visit(path, start, end)`` with the offsets of
    every value (``path`` holds the keys and list indices that lead to it). Raises ValueError or
    IndexError when the text is not plain JSON."""
    end = _walk(text, 0, (), visit)
    if text[end:].strip():
        raise ValueError("text after the document")


def _walk(text: str, pos: int, path: tuple, visit) -> int:
    """Skip the JSON value at ``pos`` (visiting it and what it holds); return its end."""
    pos = _WHITESPACE.match(text, pos).end()
    start, char = pos, text[pos]
    if char in "{[":
        closing, pos, index = ("}" if char == "{" else "]"), pos + 1, 0
        while True:
            pos = _WHITESPACE.match(text, pos).end()
            if text[pos] == closing:
                visit(path, start, pos + 1)
                return pos + 1
            if char == "{":
                key, pos = json.decoder.scanstring(text, pos + 1)
                pos = _WHITESPACE.match(text, pos).end() + 1  # the colon
            else:
                key, index = index, index + 1
            pos = _walk(text, pos, (*path, key), visit)
            pos = _WHITESPACE.match(text, pos).end()
            if text[pos] == ",":
                pos += 1
    if char == '"':
        _, end = json.decoder.scanstring(text, pos + 1)
    else:
        match = _SCALAR.match(text, pos)
        if not match:
            raise ValueError(f"unexpected {char!r} at {pos}")
        end = match.end()
    visit(path, start, end)
    return end
