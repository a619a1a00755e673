"""Lint many files, in this process or in a pool of worker processes (``--jobs N``).

The files of one run share their projects (``analysis.project``): a module that several linted
files import is read and parsed once per process, and the summaries of its functions are
computed once per process. Worker processes start with no project state and each builds what
its own files need, lazily."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace

from torchlint.analysis.project import Projects
from torchlint.engine.autofix import FixOptions
from torchlint.engine.cache import LintCache
from torchlint.engine.files import Target
from torchlint.engine.lint import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_RULE_CPU_BUDGET,
    SYNTAX_CODE,
    FileResult,
    TooLarge,
    fix_bytes,
    fix_file,
    lint_bytes,
    lint_file,
    read_file,
    syntax_finding,
)
from torchlint.engine.rule import Rule, all_rules

# Below this many files a process pool costs more than it saves.
MIN_FILES_PER_WORKER = 4


@dataclass(frozen=True)
class FixRequest:
    """What to do about fixes: ``edits`` makes every fix's edits (for the JSON and SARIF reports);
    ``apply`` runs the fix rounds with ``options``, writing changed files (``write``) or producing
    their diffs (``diff``)."""

    edits: bool = False
    apply: bool = False
    write: bool = False
    diff: bool = False
    unsafe: bool = False

    def options(self, settings) -> FixOptions:
        return FixOptions(unsafe=self.unsafe, fixable=settings.fixable_codes())


# What a worker receives per file: (path, enabled codes, known error, size limit, fixes: None or
# (FixRequest, FixOptions)). Plain tuples pickle fast.
Job = tuple[str, frozenset, "str | None", int, "tuple | None"]


def _rules_for(codes: frozenset) -> list[type[Rule]]:
    registry = all_rules()
    return [registry[c] for c in sorted(codes) if c in registry]


def lint_job(job: Job, projects: Projects | None = None) -> FileResult:
    path, codes, error, max_bytes, fixes = job
    if error is not None:
        return FileResult(path, findings=[syntax_finding(path, 1, 1, error)] if SYNTAX_CODE in codes else [])
    rules = _rules_for(codes)
    if fixes is not None and fixes[0].apply:
        request, options = fixes
        result = fix_file(
            path, rules, options, max_bytes, DEFAULT_RULE_CPU_BUDGET, request.write, request.diff, projects
        )
    else:
        edits = fixes is not None and fixes[0].edits
        result = lint_file(path, rules, max_bytes, DEFAULT_RULE_CPU_BUDGET, edits, projects)
    return _without_unfixable(result, fixes)


# A worker process's projects, shared by the files it lints (set up by _start_worker).
_worker_projects: Projects | None = None


def _start_worker() -> None:
    global _worker_projects
    _worker_projects = Projects()
    _ignore_interrupts()


def _worker_job(job: Job) -> FileResult:
    result = lint_job(job, _worker_projects)
    gc.freeze()  # see _long_lived_frozen; a worker's state dies with it
    return result


@contextmanager
def _long_lived_frozen():
    """Between two files, whatever is still alive lives on for the rest of the run: the rules and
    their tables, and the projects' parsed modules and summaries (a file's own analysis is freed
    by reference counting, see FileContext.release). ``gc.freeze()`` after each file keeps the
    cyclic collector from scanning that state again and again, finding nothing (2.3 s of full
    collections on the 378k-line audit tree with cross-file summaries, 0 objects collected);
    what was frozen goes back to the collector when the run ends."""
    try:
        yield gc.freeze
    finally:
        gc.unfreeze()


def _without_unfixable(result: FileResult, fixes: tuple | None) -> FileResult:
    """Findings of rules the configuration makes unfixable carry no fix."""
    if fixes is not None and fixes[1].fixable is not None:
        allowed = fixes[1].fixable
        result.findings = [f if f.fix is None or f.code in allowed else replace(f, fix=None) for f in result.findings]
    return result


def lint_stdin_bytes(data: bytes, path: str, codes: frozenset, fixes: tuple | None = None) -> FileResult:
    """Lint standard input; with fixes applied, the result keeps the fixed text (for stdout)."""
    rules = _rules_for(codes)
    if fixes is not None and fixes[0].apply:
        request, options = fixes
        result = fix_bytes(data, path, rules, options, DEFAULT_RULE_CPU_BUDGET, diff=request.diff, keep_text=True)
    else:
        result = lint_bytes(data, path, rules, DEFAULT_RULE_CPU_BUDGET, fixes is not None and fixes[0].edits)
    return _without_unfixable(result, fixes)


def resolve_jobs(jobs: int) -> int:
    """``--jobs 0`` means one worker per available CPU."""
    if jobs > 0:
        return jobs
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def _pool_context():
    import multiprocessing  # only when a pool is used: it is slow to import

    # fork starts workers instantly with every rule already imported; elsewhere use the default.
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def _ignore_interrupts() -> None:
    # Ctrl-C reaches the whole process group: let only the parent handle it (one clean
    # "interrupted" line and exit status 130, rather than a traceback from every worker).
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def lint_targets(
    targets: Sequence[Target],
    jobs: int = 1,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
    fixes: Callable[[Target], FixRequest | None] | None = None,
    cache: LintCache | None = None,
) -> Iterator[FileResult]:
    """Results in the order of ``targets``. ``fixes`` says, per target, what to do about fixes;
    with a ``cache``, files whose results it holds are not linted again (fixing always lints)."""
    work: list[Job] = []
    for t in targets:
        request = fixes(t) if fixes is not None else None
        plan = (request, request.options(t.settings)) if request is not None else None
        work.append((t.path, t.settings.codes_for(t.path), t.error, max_bytes, plan))
    if cache is None:
        yield from _lint_jobs(work, jobs)
        return
    # Look every file up first (reading and hashing is cheap next to linting), lint the misses
    # in one batch (in processes, with --jobs), then hand out the results in order.
    plan = [(job, *_lookup(cache, job)) for job in work]
    fresh = _lint_jobs([job for job, _, _, cached in plan if cached is None], jobs)
    for job, key, variant, cached in plan:
        if cached is not None:
            yield cached
            continue
        result = next(fresh)
        if key is not None:
            cache.put(job[0], key, result, variant)
        yield result


def _lookup(cache: LintCache, job: Job) -> tuple[str | None, str, FileResult | None]:
    """(the file's cache key, its entry's variant, its cached result): no key for a file the
    cache leaves alone (fixes to apply, already known unreadable, over the size limit, unreadable)."""
    path, codes, error, max_bytes, fixes = job
    if error is not None or (fixes is not None and fixes[0].apply):
        return None, "", None
    try:
        data, _ = read_file(path, max_bytes)
    except TooLarge:
        return None, "", None
    if data is None:
        return None, "", None
    # Which fixes the findings carry, and whether with their edits, is part of the result.
    fix_plan = None if fixes is None else [fixes[0].edits, fixes[1].unsafe, sorted(fixes[1].fixable or ["*"])]
    key, variant = cache.key(path, data, codes, max_bytes, fix_plan), "edits" if fix_plan and fix_plan[0] else ""
    return key, variant, cache.get(path, key, variant)


def _lint_jobs(work: list[Job], jobs: int) -> Iterator[FileResult]:
    workers = min(resolve_jobs(jobs), max(1, len(work) // MIN_FILES_PER_WORKER))
    if workers <= 1:
        projects = Projects()
        with _long_lived_frozen() as freeze:
            for job in work:
                result = lint_job(job, projects)
                freeze()
                yield result
        return
    all_rules()  # import every rule before forking, so workers inherit them
    # Small chunks keep the workers evenly loaded when file sizes vary a lot.
    chunksize = max(1, min(16, len(work) // (workers * 8)))
    with _pool_context().Pool(workers, initializer=_start_worker) as pool:
        yield from pool.imap(_worker_job, work, chunksize=chunksize)
