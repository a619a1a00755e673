"""Fixes in notebooks: edits of the joined program mapped into the cells, cells written back into
the ``.ipynb`` text, and the per-cell diff.

Rules and their fixes see a notebook as one program (``notebook.parse_notebook``); their edits
are positions in that program. :class:`CellMapper` turns each edit into an edit of one cell,
in the cell's own lines and columns (the way findings are located), or refuses the fix with the
reason: an edit may not span two cells, put code into a cell that is not Python (``%%bash``, a
cell that does not parse), change a line of IPython syntax (``%matplotlib inline`` stays as it
is; a statement after ``%time`` may change), or leave a cell that does not compile on its own.
Where an insertion falls between two cells, it goes into the cell of the statement it was
placed before or after.

:class:`NotebookDocument` is what the fix rounds (``autofix.fix_text``) work on for a notebook:
it applies cell edits to the ``.ipynb`` text by replacing only the ``source`` of the cells that
change, in the representation they had (a list of lines or one string), keeping each unchanged
line's JSON text as it was; everything else of the file (ids, metadata, outputs, execution
counts, indentation, key order, the final newline) stays byte for byte.
"""

from __future__ import annotations

import bisect
import difflib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from torchlint.engine.autofix import apply_spans, compile_error, line_starts, spans
from torchlint.engine.finding import Edit, FixError
from torchlint.engine.notebook import CellSpan, NotebookIndex, cell_text, is_source_path, parse_notebook, walk_json

# ----- program edits -> cell edits ------------------------------------------------------------------


@dataclass(frozen=True)
class _Cell:
    """A code cell's place in the joined program: its text there is ``program[start:end]``,
    every line ended by a newline (the cell's own source may lack the last one)."""

    span: CellSpan
    start: int
    end: int


class CellMapper:
    """Maps the edits of fixes made on a notebook's program (``program``, indexed by ``index``)
    to edits of its cells."""

    def __init__(self, index: NotebookIndex, program: str):
        self.index = index
        self.program = program
        self.starts = line_starts(program)
        self.cells = []
        for span in index.cells:
            start = self.starts[span.first_line - 1]
            after = span.first_line - 1 + span.line_count
            end = self.starts[after] if after < len(self.starts) else len(program)
            self.cells.append(_Cell(span, start, end))

    def cell_edits(self, edits: Sequence[Edit], anchors: Mapping[Edit, int]) -> tuple[Edit, ...]:
        """The cell edits of one fix. ``anchors``: for edits that insert code next to a statement,
        the program line of that statement. Raises FixError when the fix cannot be made in cells."""
        placed = []  # (cell, start, end, text) in the cell's program text
        for edit, (start, end, text) in zip(edits, spans(self.program, edits)):
            placed.append(self._place(start, end, text, anchors.get(edit)))
        self._check_cells(placed)
        found = [self._in_source(cell, start, end, text) for cell, start, end, text in placed]
        return tuple(sorted(found, key=lambda e: (e.cell, e.line, e.column, e.end_line, e.end_column)))

    # --- which cell
    def _place(self, start: int, end: int, text: str, anchor: int | None) -> tuple[_Cell, int, int, str]:
        start, end, text = _trimmed(self.program, start, end, text)
        while not text and self.program.startswith("\n", start) and start + 1 < end and self._line_start(start):
            start += 1  # a deletion leaves the blank lines above what it deletes (libcst counts them in)
        if start == end:
            cell, start = self._insertion_cell(start, text, anchor)
            end = start
        else:
            cell = next((c for c in self.cells if c.start <= start and end <= c.end), None)
            if cell is None:
                cell, start, end = self._clipped(start, end)
            if not cell.span.python:
                raise FixError(f"it would change cell {cell.span.cell}, which is not Python")
        return cell, start - cell.start, end - cell.start, text

    def _clipped(self, start: int, end: int) -> tuple[_Cell, int, int]:
        """An edit over several cells may change only one of them: the others' parts may only be
        blank lines, which it then leaves where they are (blank lines between statements mean
        nothing to Python: libcst counts those at the end of a cell as the next statement's)."""
        parts = [(c, max(start, c.start), min(end, c.end)) for c in self.cells if c.start < end and start < c.end]
        changed = [part for part in parts if self.program[part[1] : part[2]].strip("\n")]
        if len(changed) != 1:
            numbers = [str(cell.span.cell) for cell, *_ in (changed if len(changed) > 1 else parts)]
            raise FixError(f"it would change cells {', '.join(numbers[:-1])} and {numbers[-1]} together")
        return changed[0]

    def _insertion_cell(self, at: int, text: str, anchor: int | None) -> tuple[_Cell, int]:
        """The cell an insertion goes into, and where. Whole lines inserted among blank lines may
        go to any of their line starts (the code is the same): the one in the cell of the
        statement they were placed next to, nearest to where the edit put them."""
        places = [at]
        if text.endswith("\n") and self._line_start(at):
            places = self._blank_run(at)
        home = self.index.locate(anchor)[0] if anchor is not None else None
        options = []  # (not in the anchor's cell, distance, earlier cell first) -> (cell, offset)
        for place in places:
            for order, cell in enumerate(c for c in self.cells if c.start <= place <= c.end and c.span.python):
                options.append(((cell.span.cell != home, abs(place - at), order), (cell, place)))
        if not options:
            raise FixError("it would put code outside the notebook's Python cells")
        return min(options, key=lambda option: option[0])[1]

    def _line_start(self, offset: int) -> bool:
        return offset == 0 or self.program[offset - 1] == "\n"

    def _blank_run(self, at: int) -> list[int]:
        """The line starts around ``at`` that only blank program lines separate from it (blank
        lines, cells left out of the program, a `%%time` line)."""
        line = bisect.bisect_right(self.starts, at)  # 1-based line starting at `at`

        def blank(number: int) -> bool:
            return 0 < number < len(self.starts) and self.program[self.starts[number - 1] : self.starts[number]] == "\n"

        first = line
        while blank(first - 1):
            first -= 1
        last = line
        while blank(last):
            last += 1
        return [self.starts[number - 1] for number in range(first, last + 1)]

    # --- whether each cell still compiles alone
    def _check_cells(self, placed: list[tuple[_Cell, int, int, str]]) -> None:
        for cell in {id(c): c for c, *_ in placed}.values():
            text = self.program[cell.start : cell.end]
            fixed = apply_spans(text, [(start, end, new) for c, start, end, new in placed if c is cell])
            # A cell that compiled must still compile; of one that did not, only parsing is asked.
            compiles = compile_error(text, "<cell>", top_level_await=True) is None
            error = compile_error(fixed, "<cell>", top_level_await=True, only_ast=not compiles)
            if error is not None:
                where = f" (line {error.lineno})" if isinstance(error, SyntaxError) and error.lineno else ""
                message = error.msg if isinstance(error, SyntaxError) else str(error)
                raise FixError(
                    f"cell {cell.span.cell} would not {'compile' if compiles else 'parse'}: {message}{where}"
                )

    # --- cell program text -> the cell's own source
    def _in_source(self, cell: _Cell, start: int, end: int, text: str) -> Edit:
        """The edit in the cell's lines and columns as its source has them: IPython lines as
        written (columns after `%time ` moved back), no newline added at its end."""
        program_text = self.program[cell.start : cell.end]
        if not cell.span.newline_at_end and end == len(program_text):
            # The program ends each cell with a newline that the cell's source does not have.
            if start == end:
                start = end = end - 1
                text = "\n" + (text[:-1] if text.endswith("\n") else text)
            elif text.endswith("\n"):
                end, text = end - 1, text[:-1]
            elif not text and start > 0 and program_text[start - 1] == "\n":  # its last lines go
                start, end = start - 1, end - 1
            else:
                end -= 1
        starts = line_starts(program_text)
        line, column = _position(starts, start)
        end_line, end_column = _position(starts, end)
        for number in range(line, min(end_line, cell.span.line_count) + 1):
            program_line = cell.span.first_line + number - 1
            original = self.index.original_lines.get(program_line)
            if original is None or (number == end_line and end_column == 1 and start < end):
                continue  # not a line of IPython syntax, or one the edit ends before
            neutral = program_text[starts[number - 1] : starts[number] - 1]
            if start == end and column == 1 and text.endswith("\n"):
                if original.lstrip().startswith("%%"):  # a cell magic stays the first line of its cell
                    column = end_column = len(original) + 1
                    text = "\n" + text[:-1]
                continue  # new lines before this one
            if start == end and column == len(neutral) + 1 and text.startswith("\n"):
                column = end_column = len(original) + 1  # new lines after this one
                continue
            shift = self.index.column_shifts.get(program_line, 0)
            indent = len(neutral) - len(neutral.lstrip())
            if shift and line == end_line == number and column > indent:  # inside `%time <statement>`
                column, end_column = column + shift, end_column + shift
                continue
            raise FixError(f"it would change `{original.strip()}` (IPython syntax) in cell {cell.span.cell}")
        return Edit(line, column, end_line, end_column, text, cell=cell.span.cell)


def _position(starts: list[int], offset: int) -> tuple[int, int]:
    row = bisect.bisect_right(starts, offset) - 1
    return row + 1, offset - starts[row] + 1


def _trimmed(text: str, start: int, end: int, new: str) -> tuple[int, int, str]:
    """The same edit without the text it leaves as it was at either end. The end first: an edit
    that adds lines before an indented statement (`    x` -> `    new\n    x`) becomes the
    insertion of whole lines at the start of the line."""
    old = text[start:end]
    suffix = 0
    while suffix < min(len(old), len(new)) and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    prefix = 0
    while prefix < min(len(old), len(new)) - suffix and old[prefix] == new[prefix]:
        prefix += 1
    return start + prefix, end - suffix, new[prefix : len(new) - suffix]


# ----- the .ipynb text --------------------------------------------------------------------------


@dataclass
class _Source:
    """One code cell's ``source`` in the ``.ipynb`` text."""

    cell: int  # 1-based, counting every cell
    start: int = 0  # the JSON value's offsets in the text
    end: int = 0
    text: str = ""  # the source as one text, line ends as stored
    lines: list[str] | None = None  # the strings of a source stored as a list (None: one string)
    spots: list[tuple[int, int]] = field(default_factory=list)  # their offsets in the text


def _sources(text: str) -> dict[int, _Source]:
    """The code cells' sources of a notebook's text, by cell."""
    data = json.loads(text)
    cells = data.get("cells", ()) if isinstance(data, dict) else ()
    found: dict[int, _Source] = {}

    def visit(path: tuple, start: int, end: int) -> None:
        if not is_source_path(path) or not isinstance(cells[path[1]], dict):
            return
        if cells[path[1]].get("cell_type") != "code":
            return
        entry = found.setdefault(path[1] + 1, _Source(path[1] + 1))
        if len(path) == 4:
            entry.spots.append((start, end))
            return
        source = cells[path[1]]["source"]
        entry.start, entry.end = start, end
        entry.lines = source if isinstance(source, list) else None
        entry.text = "".join(source) if isinstance(source, list) else source

    walk_json(text, visit)
    return found


def _stored_offsets(stored: str) -> list[int]:
    """For each offset of the cell's text with ``\\n`` line ends (``cell_text``), the offset of
    the same place in the source as stored (whose line ends may be ``\\r\\n``)."""
    offsets, at = [], 0
    while at < len(stored):
        offsets.append(at)
        at += 2 if stored.startswith("\r\n", at) else 1
    offsets.append(len(stored))
    return offsets


def _with_newline(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def _lines_of(text: str) -> list[str]:
    """A source split as nbformat stores it: each line with its newline, the last one without."""
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def _rewritten(text: str, source: _Source, edits: list[tuple[int, int, str]], ensure_ascii: bool) -> str:
    """The JSON text of a cell's source with ``edits`` (offsets in its ``cell_text``) made, in the
    representation it had. In a list of lines, the strings that no edit touches stay as they were
    written; the text an edit makes is split into lines as nbformat splits it."""
    if "\r" in source.text:
        offsets, newline = _stored_offsets(source.text), "\r\n" if "\r\n" in source.text else "\n"
        edits = [(offsets[start], offsets[end], new.replace("\n", newline)) for start, end, new in edits]
    if source.lines is None:
        return json.dumps(apply_spans(source.text, edits), ensure_ascii=ensure_ascii)
    lines = list(source.lines)
    written: list[str | None] = [text[start:end] for start, end in source.spots]
    for start, end, new in sorted(edits, reverse=True):  # from the end: earlier offsets stay valid
        bounds = [0]
        for line in lines:
            bounds.append(bounds[-1] + len(line))
        first = bisect.bisect_right(bounds, start) - 1  # the string holding `start`...
        if start == end and bounds[first] == start:
            last = first - 1  # ...or none: an insertion between two strings touches neither
        else:
            last = max(first, bisect.bisect_left(bounds, end) - 1)
        while first > 0 and not lines[first - 1].endswith("\n"):
            first -= 1  # keep lines whole: the edit continues the line of the string before
        joined = "".join(lines[first : last + 1])
        made = joined[: start - bounds[first]] + new + joined[end - bounds[first] :]
        while made and not made.endswith("\n") and last + 1 < len(lines):
            last += 1  # ... or the next string continues the line the edit ends
            made += lines[last]
        lines[first : last + 1] = _lines_of(made)
        written[first : last + 1] = [None] * len(_lines_of(made))
    rendered = [old or json.dumps(line, ensure_ascii=ensure_ascii) for old, line in zip(written, lines)]
    if not rendered:
        return "[]"
    spots = source.spots
    if not spots:  # it was `[]`
        return "[" + ", ".join(rendered) + "]"
    opening = text[source.start + 1 : spots[0][0]]  # lay the list out as it was
    closing = text[spots[-1][1] : source.end - 1]
    between = text[spots[0][1] : spots[1][0]] if len(spots) > 1 else "," + opening
    return "[" + opening + between.join(rendered) + closing + "]"


class NotebookDocument:
    """A notebook's ``.ipynb`` text, for the fix rounds: edits address cells (``Edit.cell``)."""

    def __init__(self, text: str, path: str):
        """Raises NotebookError for a text that is not a notebook, ValueError for one whose JSON
        this module cannot follow (``NaN``), which is then not fixed."""
        self.path = path
        self._parsed: tuple[str, dict[int, _Source]] | None = None
        program = parse_notebook(text)
        self._broken = len(program.broken_cells)
        self._compiles = compile_error(program.source, path, top_level_await=True) is None
        self._sources(text)

    def _sources(self, text: str) -> dict[int, _Source]:
        if self._parsed is None or self._parsed[0] is not text:
            self._parsed = (text, _sources(text))
        return self._parsed[1]

    def _cell_text(self, text: str, cell: int) -> str:
        return cell_text(self._sources(text)[cell].text, cell)

    def spans(self, text: str, edits: Sequence[Edit]) -> list[tuple[tuple[int, int], tuple[int, int], str]]:
        """Edits as ((cell, start), (cell, end), text): offsets in the cell's text."""
        found = []
        for edit in edits:
            ((start, end, new),) = spans(self._cell_text(text, edit.cell), [edit])
            found.append(((edit.cell, start), (edit.cell, end), new))
        return found

    def apply(self, text: str, found: Sequence[tuple[tuple[int, int], tuple[int, int], str]]) -> str:
        by_cell: dict[int, list[tuple[int, int, str]]] = {}
        for (cell, start), (_, end), new in found:
            by_cell.setdefault(cell, []).append((start, end, new))
        sources = self._sources(text)
        ensure_ascii = text.isascii()
        out, at = [], 0
        for cell in sorted(by_cell, key=lambda number: sources[number].start):
            source = sources[cell]
            out.append(text[at : source.start])
            out.append(_rewritten(text, source, by_cell[cell], ensure_ascii))
            at = source.end
        out.append(text[at:])
        return "".join(out)

    def check(self, text: str) -> None:
        """A fixed notebook must still be one, with no cell that no longer parses, and a program
        that compiles (or parses, when the original did not compile)."""
        try:
            program = parse_notebook(text)
        except Exception as exc:
            raise FixError(f"the fixed notebook would not be valid ({exc})") from None
        if len(program.broken_cells) > self._broken:
            raise FixError("a cell of the fixed notebook would not parse")
        error = compile_error(program.source, self.path, top_level_await=True, only_ast=not self._compiles)
        if error is not None:
            raise FixError(f"the fixed notebook's cells would not {'compile' if self._compiles else 'parse'} ({error})")


def notebook_diff(path: str, before: str, after: str) -> str:
    """What fixing changed, cell by cell, as unified diffs headed ``nb.ipynb:cell 3`` (as ruff
    shows notebook fixes); every line of a cell ends with a newline here."""
    old, new = _sources(before), _sources(after)
    out = []
    for cell in sorted(old):
        if cell not in new or old[cell].text == new[cell].text:
            continue
        name = f"{path}:cell {cell}"
        before_lines, after_lines = (_lines_of(_with_newline(cell_text(s[cell].text, cell))) for s in (old, new))
        out.extend(difflib.unified_diff(before_lines, after_lines, name, name))
    return "".join(out)
