"""Making and applying fixes: the edits of each fix, which fixes go together, rounds until the file
settles, and writing the result back (``--fix``) or showing it (``--diff``).

Like ruff, fixes are applied in rounds: each round lints the current text, takes every wanted fix
whose edits overlap no edit already taken, applies them together, and lints again, until no fix
applies (at most ``MAX_ROUNDS``). A fix whose result would not parse (or no longer compile, when
the file compiled) is skipped and said so; it never reaches the file.
"""

from __future__ import annotations

import ast
import difflib
import io
import os
import tokenize
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from torchlint.engine.finding import Edit, Finding, FixError, location

# Rounds before giving up on a file whose fixes keep changing it (a fix that does not remove its
# finding would otherwise loop forever).
MAX_ROUNDS = 12


@dataclass(frozen=True)
class FixOptions:
    """Which fixes may be applied: unsafe ones or not, and the codes ``fixable``/``unfixable`` allow."""

    unsafe: bool = False
    fixable: frozenset[str] | None = None  # None: every code

    def allows(self, finding: Finding) -> bool:
        fix = finding.fix
        if fix is None or not (fix.safe or self.unsafe):
            return False
        return self.fixable is None or finding.code in self.fixable


# ----- edits ----------------------------------------------------------------------------------------


def make_edits(ctx, findings: list[Finding], wanted: Callable[[Finding], bool] | None, cells=None) -> tuple[list, list]:
    """The findings with the edits of the fixes ``wanted`` made and every ``build`` dropped (a
    result must pickle); and one-line problems for the fixes that could not be made. ``cells``:
    for a notebook, the ``notebookfix.CellMapper`` that turns edits of its program into edits
    of its cells."""
    problems: list[str] = []
    out = []
    cstmap = None
    checker = None  # compiles the file: only once a fix is made (a plain lint makes none)
    for finding in findings:
        fix = finding.fix
        if fix is None or fix.build is None:
            out.append(finding)
            continue
        if wanted is None or not wanted(finding):
            out.append(replace(finding, fix=replace(fix, build=None)))
            continue
        from torchlint.engine import cstedit  # libcst: only when edits are asked for

        try:
            if cstmap is None:
                cstmap = cstedit.CstMap(ctx)
            editor = cstedit.Editor(ctx, cstmap)
            fix.build(editor)
            edits = _unique(editor.edits)
            if not edits:
                raise FixError("it would change nothing")
            if _overlapping(spans(ctx.source, edits)):
                raise FixError("its edits overlap")
            # In a notebook, each cell first (a problem is then said in the cells' terms).
            in_cells = cells.cell_edits(edits, editor.anchors) if cells is not None else None
            checker = checker or _ParseCheck(ctx.source, ctx.path, top_level_await=cells is not None)
            checker.check(apply_edits(ctx.source, edits))
            edits = in_cells or edits
        except FixError as exc:
            problems.append(f"{_where(finding)}: {finding.code} fix skipped: {exc}")
            out.append(replace(finding, fix=None))
            continue
        except Exception as exc:  # a bug in a fix must not cost the finding or the run
            problems.append(
                f"{_where(finding)}: {finding.code} fix crashed ({type(exc).__name__}: {exc}); please report this bug"
            )
            out.append(replace(finding, fix=None))
            continue
        out.append(replace(finding, fix=replace(fix, edits=edits, build=None)))
    return out, problems


def _where(finding: Finding) -> str:
    return location(finding.path, finding.cell, finding.line)


def _unique(edits: Sequence[Edit]) -> tuple[Edit, ...]:
    seen = []
    for edit in edits:
        if edit not in seen:
            seen.append(edit)
    return tuple(sorted(seen, key=lambda e: (e.line, e.column, e.end_line, e.end_column)))


class _ParseCheck:
    """Whether a fixed text still parses, and still compiles when the original did."""

    def __init__(self, source: str, path: str, top_level_await: bool = False):
        self.path = path
        self.top_level_await = top_level_await
        self._compiles = compile_error(source, path, top_level_await) is None

    def check(self, text: str) -> None:
        error = compile_error(text, self.path, self.top_level_await, only_ast=not self._compiles)
        if error is not None:
            raise FixError(f"the fixed file would not {'compile' if self._compiles else 'parse'} ({error})")


def compile_error(text: str, path: str, top_level_await: bool = False, only_ast: bool = False) -> Exception | None:
    """Why ``text`` does not compile (or parse, ``only_ast``), or None. Notebook cells may
    `await` at top level (IPython runs them in an event loop)."""
    flags = (ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if top_level_await else 0) | (ast.PyCF_ONLY_AST if only_ast else 0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, path, "exec", flags, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return exc
    return None


def line_starts(text: str) -> list[int]:
    """The offset where each line of ``text`` starts (and one past a final newline)."""
    starts = [0]
    at = text.find("\n")
    while at >= 0:
        starts.append(at + 1)
        at = text.find("\n", at + 1)
    return starts


def spans(text: str, edits: Sequence[Edit]) -> list[tuple[int, int, str]]:
    """Edits as (start, end, text) character offsets into ``text``."""
    starts = line_starts(text)
    return [(starts[e.line - 1] + e.column - 1, starts[e.end_line - 1] + e.end_column - 1, e.text) for e in edits]


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    return apply_spans(text, spans(text, edits))


def apply_spans(text: str, found: Sequence[tuple[int, int, str]]) -> str:
    out = []
    at = 0
    for start, end, new in sorted(set(found), key=lambda s: (s[0], s[1])):
        out.append(text[at:start])
        out.append(new)
        at = end
    out.append(text[at:])
    return "".join(out)


def _conflict(a: tuple[int, int, str], b: tuple[int, int, str]) -> bool:
    """Whether two edits of one text cannot both be applied (identical ones can: they are one)."""
    if a == b:
        return False
    (s1, e1, _), (s2, e2, _) = a, b
    if s1 == e1 or s2 == e2:  # an insertion: it may not touch the other edit at all
        return s2 <= s1 <= e2 or s1 <= s2 <= e1
    return s1 < e2 and s2 < e1


def _overlapping(found: list[tuple[int, int, str]]) -> bool:
    return any(_conflict(a, b) for i, a in enumerate(found) for b in found[i + 1 :])


# ----- rounds ---------------------------------------------------------------------------------------


@dataclass
class FixOutcome:
    text: str
    result: object  # the FileResult of the last lint (the findings left)
    fixed: Counter = field(default_factory=Counter)  # code -> fixes applied
    problems: list[str] = field(default_factory=list)


class PythonDocument:
    """What the fix rounds work on for a Python file: its text, which edits address by line and
    column. (A notebook's is ``notebookfix.NotebookDocument``: edits address its cells.)"""

    def __init__(self, source: str, path: str):
        self._checker = _ParseCheck(source, path)

    def spans(self, text: str, edits: Sequence[Edit]) -> list:
        """Edits as (start, end, text), with starts and ends that order as positions do."""
        return spans(text, edits)

    def apply(self, text: str, found: Sequence) -> str:
        return apply_spans(text, found)

    def check(self, text: str) -> None:
        """Raise FixError when the fixed text is not acceptable (it does not parse)."""
        self._checker.check(text)


def choose(text: str, findings: Sequence[Finding], options: FixOptions, document) -> tuple[list[Finding], list]:
    """The wanted fixes of one round that do not overlap one another (in source order), with their spans."""
    taken: list = []
    chosen = []
    candidates = [f for f in findings if options.allows(f) and f.fix.edits]
    candidates.sort(key=lambda f: (_first_place(f.fix.edits), f.cell or 0, f.line, f.column, f.code))
    for finding in candidates:
        mine = document.spans(text, finding.fix.edits)
        if any(_conflict(a, b) for a in mine for b in taken):
            continue
        chosen.append(finding)
        taken.extend(span for span in mine if span not in taken)
    return chosen, taken


def _first_place(edits: Sequence[Edit]) -> tuple[int, int, int]:
    return min((edit.cell or 0, edit.line, edit.column) for edit in edits)


def fix_text(source: str, path: str, lint: Callable, options: FixOptions, document=None) -> FixOutcome:
    """Apply the allowed fixes to ``source`` in rounds. ``lint(text, wanted)`` lints a text, making
    the edits of the fixes ``wanted`` says, and returns its FileResult. ``document``: how edits
    address the text (default: a Python file's, :class:`PythonDocument`). The problems reported
    are those of the last lint, on the text as written: a fix skipped in every round is said
    once, at the place it has in the fixed file."""
    outcome = FixOutcome(source, None)
    document = document or PythonDocument(source, path)
    for _ in range(MAX_ROUNDS):
        result = lint(outcome.text, options.allows)
        chosen, taken = choose(outcome.text, result.findings, options, document)
        if not chosen:
            break
        fixed = document.apply(outcome.text, taken)
        try:
            document.check(fixed)
        except Exception:  # each fix parses alone but not together: take the first one this round
            chosen = chosen[:1]
            fixed = document.apply(outcome.text, document.spans(outcome.text, chosen[0].fix.edits))
        outcome.text = fixed
        outcome.fixed.update(f.code for f in chosen)
    else:
        result = lint(outcome.text, options.allows)
        if choose(outcome.text, result.findings, options, document)[0]:
            result.problems.append(
                f"{path}: fixes kept changing the file after {MAX_ROUNDS} rounds, stopped (a bug in a fix, please report it)"
            )
    outcome.result = result
    outcome.problems = list(dict.fromkeys(result.problems))
    return outcome


# ----- files ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TextFormat:
    """How a file's text was stored, so a fixed file is written back the same way."""

    encoding: str
    newline: str

    @classmethod
    def of(cls, data: bytes) -> TextFormat:
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError:
            encoding = "utf-8"
        newline = "\r\n" if b"\r\n" in data else "\r" if b"\r" in data else "\n"
        return cls(encoding, newline)

    def encode(self, text: str) -> bytes:
        if self.newline != "\n":
            text = text.replace("\n", self.newline)
        return text.encode(self.encoding)


def unified_diff(path: str, before: str, after: str) -> str:
    # git's a/ and b/ prefixes for a relative path (so `git apply` takes the diff), the path itself otherwise.
    old, new = (path, path) if os.path.isabs(path) else (f"a/{path}", f"b/{path}")
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True), old, new)
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
