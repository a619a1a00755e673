"""What do cross-file lookups cost? Prints the project phase against linting without it, measured
in the same run, on any tree of Python files (a 300k-line tree or more is what it is meant for).

    python bench/project_phase.py /work/corpora/audit
    python bench/project_phase.py DIR --repeat 5

Figures (CPU seconds through the engine's runner, as ``torchlint --no-cache --jobs 1 DIR`` runs;
the best of --repeat runs, interleaved so that a change in machine load hits every figure alike):
  * lint alone: every rule, no project for any file;
  * lint in its project: the same, each file given its project (``Projects().for_file``): what
    the engine's project phase adds before any rule asks;
  * project phase: for every file, every call resolved with ``resolve_call`` (this file, then its
    imports, across files) and a summary computed for each function reached (a walk of the
    function's body that resolves its calls and asks for their summaries, the shape of the torch
    summaries): every module the tree's imports reach is read and parsed once, every function
    reached summarised once;
  * cold single file: the file whose lookups read the most other files, linted with a fresh
    project and its project phase (what pre-commit pays for one changed file), in process;
  * --jobs 1 versus --jobs 2 (``runner.lint_targets``, every rule and the project phase): CPU
    seconds of all processes, and wall time. Each worker builds the project state its own files
    need (modules it reads, summaries it computes), so the CPU over 1 job is what that repeats.
"""

from __future__ import annotations

import argparse
import ast
import gc
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

KIND = "bench.reach"


def reach(definition) -> frozenset:
    """What a function runs, transitively: a summary that asks for the summaries of its callees."""
    from torchlint.analysis.callgraph import resolve_call
    from torchlint.analysis.summaries import function_summary

    found = set()
    for node in ast.walk(definition.node):
        if isinstance(node, ast.Call):
            callee = resolve_call(definition.ctx, node)
            if callee is not None:
                found.add(callee.key)
                found |= function_summary(callee, KIND, reach, frozenset())
    return frozenset(found)


def phase_rule():
    """The project phase as a rule, so that it runs on the lint's own parsed file: every call
    resolved, and every function reached summarised."""
    from torchlint.analysis.callgraph import resolve_call
    from torchlint.analysis.summaries import function_summary
    from torchlint.engine.rule import Rule

    class ProjectPhase(Rule):
        code, name, severity = "TL999", "project-phase", "warning"
        counts = {"resolved": 0, "elsewhere": 0}

        def check(self, ctx):
            for call in ctx.calls:
                target = resolve_call(ctx, call)
                if target is None:
                    continue
                self.counts["resolved"] += 1
                self.counts["elsewhere"] += target.ctx is not ctx
                function_summary(target, KIND, reach, frozenset())
            return iter(())

    return ProjectPhase


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    from torchlint.analysis.project import Projects
    from torchlint.engine import config, runner
    from torchlint.engine.files import discover
    from torchlint.engine.lint import lint_text
    from torchlint.engine.rule import all_rules

    rules = list(all_rules().values())
    targets = list(discover([str(args.folder)], config.find_settings))
    texts = {t.path: Path(t.path).read_text(errors="replace") for t in targets}
    lines = sum(text.count("\n") for text in texts.values())
    print(
        f"tree: {len(targets)} files, {lines:,} lines ({args.folder}); {len(rules)} rules; "
        f"python {sys.version.split()[0]}"
    )

    phase = phase_rule()
    stats = {}
    for_file = Projects.for_file

    def run(with_rules, with_projects=True, jobs=1):
        """The engine as `torchlint --no-cache DIR` runs it, with these rules (and no projects at all)."""
        runner._rules_for = lambda codes: with_rules
        Projects.for_file = for_file if with_projects else (lambda self, path: None)
        try:
            return {r.path: r.dependencies for r in runner.lint_targets(targets, jobs)}
        finally:
            Projects.for_file = for_file
            gc.collect()  # what one run left behind is not the next run's cost

    def lint_with_phase():
        phase.counts.update(resolved=0, elsewhere=0)
        stats.update(deps=run([*rules, phase]), **phase.counts)

    figures = (
        ("lint alone (no projects)", lambda: run(rules, with_projects=False)),
        ("lint in its project", lambda: run(rules)),
        ("lint in its project + project phase", lint_with_phase),
    )
    timings = {label: [] for label, _ in figures}
    for _ in range(args.repeat):
        for label, fn in figures:
            start = time.process_time()
            fn()
            timings[label].append(time.process_time() - start)
    best = {label: min(values) for label, values in timings.items()}
    base = best["lint alone (no projects)"]
    print(
        f"\n{'figure (CPU seconds, --jobs 1, best of ' + str(args.repeat) + ')':<44} {'seconds':>9} {'lines/s':>10}"
        "  vs lint alone"
    )
    for label, seconds in best.items():
        print(f"{label:<44} {seconds:9.3f} {lines / seconds:10,.0f}  {seconds / base:.3f}x")

    deps = stats["deps"]
    with_deps = [p for p, d in deps.items() if d]
    print(
        f"\ncalls resolved to functions of the project: {stats['resolved']:,} ({stats['elsewhere']:,} into other "
        f"files); files consulting other files: {len(with_deps)} of {len(targets)}"
    )

    # Cold single file: the file whose project phase reads the most other files, with a fresh project.
    path = max(deps, key=lambda p: len(deps[p]))
    text = texts[path]
    cold = {"alone": [], "with its project phase": []}
    for _ in range(args.repeat):
        start = time.process_time()
        lint_text(text, path, rules)
        cold["alone"].append(time.process_time() - start)
        start = time.process_time()
        lint_text(text, path, [*rules, phase], project=Projects().for_file(path))
        cold["with its project phase"].append(time.process_time() - start)
    print(
        f"one file, cold project ({path}: {text.count(chr(10)):,} lines, {len(deps[path])} other files read): "
        + ", ".join(f"{label} {min(values):.3f} s CPU" for label, values in cold.items())
    )

    def cpu():
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    for jobs in (1, 2):
        best_run = None
        for _ in range(args.repeat):
            wall, start = time.perf_counter(), cpu()
            run([*rules, phase], jobs=jobs)
            timing = (time.perf_counter() - wall, cpu() - start)
            best_run = timing if best_run is None or timing[1] < best_run[1] else best_run
        print(
            f"--jobs {jobs} with the project phase: {best_run[1]:.3f} s CPU (all processes), {best_run[0]:.3f} s wall"
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory of this process: {peak:,.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
