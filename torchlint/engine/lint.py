"""Lint one file: read, decode, parse once, build the shared context, run the rules, apply suppressions.

Nothing a user's file contains may crash a run. A file that cannot be read,
decoded or parsed yields one ``TL000`` finding and the run goes on; a rule that
fails on a file is reported as a *problem* (a one-line message for stderr) and
the other rules still run on that file.
"""

from __future__ import annotations

import ast
import gc
import os
import signal
import stat
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from torchlint.analysis.context import FileContext
from torchlint.analysis.import_failure import never_imported
from torchlint.analysis.liveness import in_dead_function
from torchlint.analysis.project import Project, Projects
from torchlint.analysis.source import UndecodableSource, decode_source
from torchlint.engine.autofix import FixOptions, FixOutcome, TextFormat, fix_text, make_edits, unified_diff
from torchlint.engine.finding import Finding, Message
from torchlint.engine.fixers import fix_for
from torchlint.engine.notebook import NotebookError, NotebookIndex, code_cell_count, parse_notebook
from torchlint.engine.rule import Rule, all_rules
from torchlint.engine.suppress import Suppressions

SYNTAX_ERROR = ("TL000", "syntax-error", "error")
SYNTAX_CODE = SYNTAX_ERROR[0]
# Real source files stay far below this (the largest of ~1,800 files in six big ML projects
# is 0.22 MB); bigger ones are generated data that would only slow every run down.
DEFAULT_MAX_FILE_BYTES = 1_000_000
# CPU seconds one rule may spend on one file before the engine stops it (see cpu_budget).
# Every rule takes milliseconds on real files; this only catches a rule that has gone
# quadratic or worse on some unusual file, so that one file cannot hang a CI job.
DEFAULT_RULE_CPU_BUDGET = 5.0


@dataclass
class FileResult:
    """What linting one file produced; everything a reporter needs, and small enough to pickle."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    # The text of each reported line, so the text reporter can show it without re-reading the file;
    # keyed by line, or by (cell, line) in a notebook (see line_text).
    source_lines: dict = field(default_factory=dict)
    # One-line messages about the engine itself (a rule that crashed on this file).
    problems: list[str] = field(default_factory=list)
    line_count: int = 0
    skipped: bool = False  # not linted at all (over the size limit)
    # For a notebook: where its cells' lines are, in the program and in the .ipynb text.
    notebook: NotebookIndex | None = None
    # With --fix / --diff: fixes applied, by code; the unified diff (--diff); the fixed text (stdin).
    fixed: dict[str, int] = field(default_factory=dict)
    diff: str = ""
    fixed_text: str | None = None
    # Paths of the project's other files whose contents this lint consulted (cross-file
    # summaries), and of folders whose listing it consulted (who calls a function): the cache
    # reuses this result only while they are unchanged too.
    dependencies: tuple[str, ...] = ()
    # (Real absolute paths, sorted; filled by the project phase, see analysis.project.)
    # False when the result depends on more than the inputs (a rule ran out of time or crashed).
    cacheable: bool = True

    def line_text(self, finding: Finding) -> str | None:
        """The source line a finding is reported on."""
        key = finding.line if finding.cell is None else (finding.cell, finding.line)
        return self.source_lines.get(key)


def syntax_finding(path: str, line: int, column: int, message: Message | str) -> Finding:
    code, name, severity = SYNTAX_ERROR
    line, column = max(line or 1, 1), max(column or 1, 1)
    return Finding(path, line, column, line, column, code, name, severity, str(message))


def lint_source(
    source: str, path: str = "<string>", rules: Iterable[type[Rule]] | None = None, project: Project | None = None
) -> list[Finding]:
    """All findings for one file's text, sorted by position, with inline suppressions applied.
    With a ``project`` (``Projects().for_file(path)``), the lint may look into the files the text imports."""
    return lint_text(source, path, rules, project=project).findings


def lint_text(
    source: str,
    path: str,
    rules: Iterable[type[Rule]] | None = None,
    rule_budget: float | None = None,
    notebook: NotebookIndex | None = None,
    edits: Callable[[Finding], bool] | bool | None = None,
    project: Project | None = None,
) -> FileResult:
    """Lint decoded source text. ``rules=None`` runs every registered rule (TL000 included).
    ``rule_budget``: CPU seconds each rule may spend on this file (None: no limit).
    ``notebook``: the source is a notebook's joined code cells (see lint_notebook_text); fixes
    then edit cells (``Edit.cell``), and fixes that make no sense in a notebook are not offered.
    ``edits``: make the edits of the fixes of the findings it accepts (True: all of them), for
    --fix, --diff and the JSON/SARIF reports; otherwise fixes carry their description only.
    ``project``: the project ``path`` belongs to, whose other files the rules may consult
    (None: this text alone); ``dependencies`` of the result lists those they did consult."""
    rule_classes = list(all_rules().values()) if rules is None else list(rules)
    report_unparsable = rules is None or any(r.code == SYNTAX_CODE for r in rule_classes)
    result = FileResult(path, line_count=source.count("\n") + (not source.endswith("\n") and bool(source)))
    with _cyclic_gc_paused():
        tree, failure = _parse(source, path, top_level_await=notebook is not None)
        if tree is None:
            if report_unparsable:
                result.findings.append(failure)
        else:
            if project is not None:
                project = project.for_script(tree, path)
            ctx = FileContext(path, source, tree, project)
            with _consulting(project, path) as consulted:
                with cpu_budget(rule_budget) as limit:
                    for rule_cls in rule_classes:
                        if rule_cls.code == SYNTAX_CODE:
                            continue
                        _run_rule(rule_cls, ctx, result, limit, rule_budget)
                _finish(result, source, notebook)
                if notebook is not None:
                    result.findings = [f if _offered_in_notebooks(f) else replace(f, fix=None) for f in result.findings]
                if any(f.fix is not None for f in result.findings):
                    wanted = (lambda f: True) if edits is True else edits or None
                    cells = None
                    if notebook is not None and wanted is not None:
                        from torchlint.engine.notebookfix import CellMapper  # only when a notebook's fixes are made

                        cells = CellMapper(notebook, source)
                    result.findings, problems = make_edits(ctx, result.findings, wanted, cells)
                    result.problems.extend(problems)
            result.dependencies = tuple(sorted(consulted))
            ctx.release()
            return result
    return _finish(result, source, notebook)


@contextmanager
def _consulting(project: Project | None, path: str):
    """Yields the set of the other project files the lint consulted (filled on exit)."""
    if project is None:
        yield set()
        return
    with project.recording(path) as consulted:
        yield consulted


def _offered_in_notebooks(finding: Finding) -> bool:
    fixer = fix_for(finding.code) if finding.fix is not None else None
    return fixer is None or not fixer.not_in_notebooks


def lint_notebook_text(
    text: str,
    path: str,
    rules: Iterable[type[Rule]] | None = None,
    rule_budget: float | None = None,
    edits: Callable[[Finding], bool] | bool | None = None,
    project: Project | None = None,
) -> FileResult:
    """Lint a notebook's JSON text: its code cells as one program, findings located by cell.
    Invalid JSON is a TL000 finding; a notebook of another language or without code cells
    is a warning (a problem), not a finding. ``edits`` as for lint_text."""
    rule_classes = list(all_rules().values()) if rules is None else list(rules)
    report_unparsable = any(r.code == SYNTAX_CODE for r in rule_classes)
    try:
        program = parse_notebook(text)
    except NotebookError as exc:
        return FileResult(path, findings=[syntax_finding(path, 1, 1, str(exc))] if report_unparsable else [])
    if program.language != "python":
        return FileResult(
            path, skipped=True, problems=[f"{path}: skipped: a {program.language} notebook, not a Python one"]
        )
    if not code_cell_count(program):
        return FileResult(path, problems=[f"{path}: no code cells to lint"])
    result = lint_text(
        program.source, path, rule_classes, rule_budget, notebook=program.index, edits=edits, project=project
    )
    if report_unparsable:
        for cell, line, column, message in program.broken_cells:
            finding = syntax_finding(path, line, column, f"{message} (this cell is left out of the analysis)")
            result.findings.append(replace(finding, cell=cell))
    result.findings.sort(key=lambda f: (f.cell or 0, f.line, f.column, f.code))
    result.notebook = program.index
    return result


@contextmanager
def _cyclic_gc_paused():
    """Pause the cyclic garbage collector while one file is linted: the analysis allocates many
    small objects while the whole tree is alive, so collections kept re-scanning the tree
    (~13% of the lint time). What one file leaves behind is collected after it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _parse(source: str, path: str, top_level_await: bool = False) -> tuple[ast.Module | None, Finding | None]:
    # Notebook cells may `await` at top level (IPython runs them in an event loop).
    flags = ast.PyCF_ONLY_AST | (ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if top_level_await else 0)
    try:
        return compile(source, path, "exec", flags, dont_inherit=True), None
    except SyntaxError as exc:
        if "null bytes" in str(exc.msg):
            return None, _nul_finding(path, source)
        return None, syntax_finding(path, exc.lineno or 1, exc.offset or 1, f"cannot parse: {exc.msg}")
    except ValueError as exc:  # Python < 3.12 reports NUL bytes this way
        if "null bytes" in str(exc):
            return None, _nul_finding(path, source)
        return None, syntax_finding(path, 1, 1, f"cannot parse: {exc}")
    except (RecursionError, MemoryError):
        # CPython's parser gives up on expressions nested thousands deep (`a+a+...` or `-(-(-...`).
        return None, syntax_finding(
            path, 1, 1, "cannot parse: the code is nested too deeply for Python's parser (it would not run either)"
        )


def _nul_finding(path: str, source: str) -> Finding:
    offset = source.index("\0")
    line = source.count("\n", 0, offset) + 1
    column = offset - (source.rfind("\n", 0, offset) + 1) + 1
    return syntax_finding(path, line, column, "cannot parse: the file contains a NUL byte; is it a binary file?")


class RuleTimeout(BaseException):
    """Raised inside a rule whose CPU budget ran out. A BaseException, so that a rule's own
    ``except Exception`` cannot swallow it."""


@contextmanager
def cpu_budget(seconds: float | None):
    """Yields ``limit()``, a context manager that stops the code inside it with RuleTimeout
    after ``seconds`` of CPU time. Uses SIGPROF, so it works only in a main thread on Unix;
    elsewhere (or with ``seconds`` None) it limits nothing."""
    usable = seconds and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield _no_limit
        return

    def on_timeout(_signum, _frame):
        raise RuleTimeout()

    previous = signal.signal(signal.SIGPROF, on_timeout)

    @contextmanager
    def limit():
        # Re-armed every ``seconds``: should one signal be lost (it lands while the rule is inside
        # a C call that clears pending signals), the next one still stops the rule.
        signal.setitimer(signal.ITIMER_PROF, seconds, seconds)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)

    try:
        yield limit
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


@contextmanager
def _no_limit():
    yield


def _run_rule(rule_cls: type[Rule], ctx: FileContext, result: FileResult, limit=_no_limit, budget=None) -> None:
    rule = rule_cls()
    found: list[Finding] = []
    try:
        with limit():
            _collect(rule, ctx, found, result.problems)
    except RuleTimeout:
        result.cacheable = False
        result.problems.append(
            f"{ctx.path}: {rule.code} stopped after using its {budget:g} s CPU budget on this file"
            " (a performance bug in the rule, please report it); its findings for this file are missing"
        )
        return
    except RecursionError:
        result.cacheable = False
        result.problems.append(
            f"{ctx.path}: {rule.code} skipped: the code is nested too deeply for this rule (recursion limit)"
        )
        return
    except Exception as exc:  # a bug in a rule must not stop the run, nor hide the other rules' findings
        result.cacheable = False
        result.problems.append(
            f"{ctx.path}: {rule.code} crashed ({type(exc).__name__}: {exc}); its findings for this file are"
            " missing, please report this bug"
        )
        return
    result.findings.extend(found)


def _collect(rule: Rule, ctx: FileContext, found: list[Finding], problems: list[str]) -> None:
    fixer = fix_for(rule.code)
    for diag in rule.check(ctx):
        if in_dead_function(ctx, diag.node):
            continue  # code the project never runs (a function whose only call is commented out)
        if never_imported(ctx, diag.node):
            continue  # code after an import that fails (a stale script importing a name its project lost)
        line, col, end_line, end_col = ctx.span(diag.node)
        fix = diag.fix
        if fix is None and fixer is not None:
            try:
                fix = fixer.plan(ctx, diag)
            except Exception as exc:  # a bug in a fix must not cost the finding
                problems.append(
                    f"{ctx.path}:{line}: {rule.code} fix crashed ({type(exc).__name__}: {exc}); please report this bug"
                )
        found.append(
            Finding(ctx.path, line, col, end_line, end_col, rule.code, rule.name, rule.severity, str(diag.message), fix)
        )


def _finish(result: FileResult, source: str, notebook: NotebookIndex | None = None) -> FileResult:
    findings = result.findings
    # Cheap for the many files whose text never mentions `noqa` or `torchlint:`.
    suppressions = Suppressions.from_source(source, notebook)
    result.problems.extend(suppressions.problems(result.path, notebook))
    if findings:
        findings = sorted({f for f in findings if not suppressions.suppresses(f)})
        # split("\n"), not splitlines(): form feeds and other separators are not line ends to Python.
        lines = source.split("\n") if findings else []
        result.source_lines = {f.line: lines[f.line - 1] for f in findings if 0 < f.line <= len(lines)}
        if notebook is not None:
            findings, result.source_lines = _in_cells(findings, result.source_lines, notebook)
    result.findings = findings
    return result


def _in_cells(findings: list[Finding], source_lines: dict, notebook: NotebookIndex):
    """Program positions -> (cell, line in the cell), with the cell's own text of each line;
    columns of a neutralised `%time stmt` line shifted back to where the statement stands."""
    located, lines = [], {}
    for f in findings:
        cell, line = notebook.locate(f.line)
        end_cell, end_line = notebook.locate(f.end_line)
        if end_cell != cell:  # cannot happen for a node, but never report a span across cells
            end_line = line
        shift, end_shift = notebook.column_shifts.get(f.line, 0), notebook.column_shifts.get(f.end_line, 0)
        located.append(
            replace(
                f,
                cell=cell,
                line=line,
                end_line=end_line,
                column=f.column + shift,
                end_column=f.end_column + end_shift,
                message=notebook.localize(f.message, cell),
            )
        )
        if f.line in source_lines:
            lines[(cell, line)] = notebook.original_lines.get(f.line, source_lines[f.line])
    return located, lines


# ----- bytes and files ----------------------------------------------------------------------


def decode(data: bytes, path: str) -> tuple[str | None, Finding | None]:
    """Decode a file's bytes as Python does; a TL000 finding when Python could not."""
    try:
        return decode_source(data), None
    except UndecodableSource as exc:
        return None, syntax_finding(path, exc.line, exc.column, Message(exc.message, help=exc.help))


def is_notebook(path: str) -> bool:
    return path.lower().endswith(".ipynb")


def lint_bytes(
    data: bytes,
    path: str,
    rules: Sequence[type[Rule]] | None = None,
    rule_budget: float | None = None,
    edits: Callable[[Finding], bool] | bool | None = None,
    project: Project | None = None,
) -> FileResult:
    text, failure = decode(data, path)
    if text is None:
        report = rules is None or any(r.code == SYNTAX_CODE for r in rules)
        return FileResult(path, findings=[failure] if report else [], line_count=data.count(b"\n"))
    if is_notebook(path):
        return lint_notebook_text(text, path, rules, rule_budget, edits, project)
    return lint_text(text, path, rules, rule_budget, edits=edits, project=project)


class TooLarge(Exception):
    pass


def read_file(path: str, max_bytes: int = 0) -> tuple[bytes | None, str | None]:
    """The file's bytes, or a reason it cannot be read. Never blocks on a FIFO or device.
    Raises TooLarge when the file is over ``max_bytes`` (0: no limit) -- except a notebook,
    whose size is mostly its saved outputs (plots as base64), not its code."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            return None, f"cannot read: {kind}"
        if max_bytes and info.st_size > max_bytes and not is_notebook(path):
            raise TooLarge(info.st_size)
        with open(path, "rb") as handle:
            return handle.read(), None
    except FileNotFoundError:
        return None, "cannot read: no such file (a broken symbolic link?)"
    except PermissionError:
        return None, "cannot read: permission denied"
    except OSError as exc:
        return None, f"cannot read: {exc.strerror or exc}"


def lint_file(
    path: str,
    rules: Sequence[type[Rule]] | None = None,
    max_bytes: int = 0,
    rule_budget: float | None = None,
    edits: Callable[[Finding], bool] | bool | None = None,
    projects: Projects | None = None,
) -> FileResult:
    """Lint the file at ``path``; the rules may consult the other files of the project it belongs
    to (``analysis.project``), as the command does. Share one ``Projects`` across the files of a
    run (``projects``) so that each module they import is read once; without it, a new one is
    made for this file."""
    try:
        data, reason = read_file(path, max_bytes)
    except TooLarge as size:
        return FileResult(
            path,
            skipped=True,
            problems=[
                f"{path}: skipped, {size.args[0] / 1e6:.1f} MB is over the {max_bytes / 1e6:g} MB limit for one file"
                " (generated code?); exclude it, or lint it with --max-file-size 0"
            ],
        )
    if data is None:
        report = rules is None or any(r.code == SYNTAX_CODE for r in rules)
        return FileResult(path, findings=[syntax_finding(path, 1, 1, reason)] if report else [])
    projects = Projects() if projects is None else projects
    return lint_bytes(data, path, rules, rule_budget, edits, projects.for_file(path))


# ----- fixing -------------------------------------------------------------------------------------


def fix_bytes(
    data: bytes,
    path: str,
    rules: Sequence[type[Rule]] | None,
    options: FixOptions,
    rule_budget: float | None = None,
    write: bool = False,
    diff: bool = False,
    keep_text: bool = False,
    project: Project | None = None,
) -> FileResult:
    """Lint and fix one file's bytes (see ``autofix``): the result holds the findings left, the
    fixes applied and, as asked, the unified diff or the fixed text; ``write`` writes a changed
    file back at ``path`` in its own encoding and line endings."""
    text, _ = decode(data, path)
    if text is None:
        result = lint_bytes(data, path, rules, rule_budget, project=project)
        if keep_text:
            result.fixed_text = data.decode("utf-8", "replace")
        return result
    if is_notebook(path):
        outcome = _fix_notebook(text, path, rules, options, rule_budget, project)
    else:
        outcome = fix_text(
            text,
            path,
            lambda source, wanted: lint_text(source, path, rules, rule_budget, edits=wanted, project=project),
            options,
        )
    result = outcome.result
    result.problems = outcome.problems
    result.fixed = dict(Counter(outcome.fixed))
    changed = outcome.text != text
    if diff and changed:
        if is_notebook(path):
            from torchlint.engine.notebookfix import notebook_diff

            result.diff = notebook_diff(path, text, outcome.text)
        else:
            result.diff = unified_diff(path, text, outcome.text)
    if keep_text:
        result.fixed_text = outcome.text
    if write and changed:
        try:
            with open(path, "wb") as handle:
                handle.write(TextFormat.of(data).encode(outcome.text))
        except OSError as exc:
            result.problems.append(f"{path}: cannot write the fixed file: {exc.strerror or exc}")
            result.fixed = {}
    return result


def _fix_notebook(
    text: str, path: str, rules, options: FixOptions, rule_budget: float | None, project: Project | None = None
):
    """Fix rounds on a notebook's text; one that is not a notebook we can lint is only linted."""
    from torchlint.engine.notebookfix import NotebookDocument  # not loaded by a plain lint

    def lint(current: str, wanted) -> FileResult:
        return lint_notebook_text(current, path, rules, rule_budget, edits=wanted, project=project)

    try:
        document = NotebookDocument(text, path)
    except (NotebookError, ValueError, IndexError) as exc:
        result = lint(text, None)  # a text that is no notebook: its TL000 finding says why
        problems = list(result.problems)
        if not isinstance(exc, NotebookError):
            problems.append(f"{path}: not fixed: its JSON holds values (NaN, Infinity?) that cannot be rewritten")
        return FixOutcome(text, result, problems=problems)
    return fix_text(text, path, lint, options, document)


def fix_file(
    path: str,
    rules: Sequence[type[Rule]] | None,
    options: FixOptions,
    max_bytes: int = 0,
    rule_budget: float | None = None,
    write: bool = False,
    diff: bool = False,
    projects: Projects | None = None,
) -> FileResult:
    projects = Projects() if projects is None else projects
    try:
        data, _ = read_file(path, max_bytes)
    except TooLarge:
        data = None
    if data is None:  # unreadable or too large: say so as a lint does
        return lint_file(path, rules, max_bytes, rule_budget, projects=projects)
    return fix_bytes(data, path, rules, options, rule_budget, write, diff, project=projects.for_file(path))
