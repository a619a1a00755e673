"""Run `--fix --unsafe-fixes` over a copy of a tree and check what it did.

    python bench/fix_corpus.py tests/corpus /work/corpora/audit

For each tree (Python files and notebooks): the findings before and how many carry a fix (safe /
unsafe); the fixes applied and the files changed; that every changed file still parses (ast.parse)
and compiles -- for a notebook: that it is still JSON, no cell that parsed stops parsing, its
program compiles, and nothing but the sources of the cells fixed changed (not a byte outside
them); that fixing again changes nothing; and the findings after, none of which may still carry
a fix that --fix --unsafe-fixes would apply (a fix that did not remove its finding would show
there). Also the --fix throughput (lines of the files with fixes per second, in this process,
one core) beside a plain lint of the same files.
"""

from __future__ import annotations

import ast
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from torchlint.engine.autofix import FixOptions  # noqa: E402
from torchlint.engine.lint import fix_file, lint_file  # noqa: E402
from torchlint.engine.notebook import is_source_path, parse_notebook, walk_json  # noqa: E402


def python_files(root: Path) -> list[Path]:
    return sorted(
        p
        for p in root.rglob("*")
        if p.suffix in (".py", ".ipynb") and p.is_file() and ".ipynb_checkpoints" not in p.parts
    )


def damage(path: Path, before: str, after: str) -> str | None:
    """What fixing broke in a file, or None."""
    if path.suffix == ".ipynb":
        return notebook_damage(before, after)
    try:
        ast.parse(after)
        compile(after, str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        return str(exc)
    return None


def notebook_damage(before: str, after: str) -> str | None:
    try:
        old, new = json.loads(before), json.loads(after)
    except ValueError as exc:
        return f"no longer JSON: {exc}"
    program = parse_notebook(after)
    if len(program.broken_cells) > len(parse_notebook(before).broken_cells):
        return "a cell that parsed does not parse any more"
    try:
        compile(program.source, "<notebook>", "exec", ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except SyntaxError as exc:
        return f"its program does not compile: {exc}"
    for cell in old["cells"] + new["cells"]:
        cell.pop("source", None)
    if old != new:
        return "something besides the cells' sources changed"
    if _outside_sources(before) != _outside_sources(after):
        return "the text outside the cells' sources changed"
    return None


def _outside_sources(text: str) -> list[str]:
    """The notebook's text between its cells' sources."""
    spans = []
    walk_json(
        text, lambda path, start, end: spans.append((start, end)) if len(path) == 3 and is_source_path(path) else None
    )
    cuts = [0] + [offset for span in sorted(spans) for offset in span] + [len(text)]
    return [text[cuts[i] : cuts[i + 1]] for i in range(0, len(cuts), 2)]


def run(tree: Path) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / tree.name
        shutil.copytree(tree, copy, symlinks=False, ignore=shutil.ignore_patterns("__pycache__", ".git"))
        files = python_files(copy)
        before = {p: lint_file(str(p), max_bytes=1_000_000, edits=True) for p in files}
        findings = Counter()
        fixable = Counter()
        for result in before.values():
            for f in result.findings:
                findings[f.code] += 1
                if f.fix is not None:
                    fixable[f.fix.applicability] += 1
        with_fixes = [p for p, r in before.items() if any(f.fix is not None for f in r.findings)]
        lines = sum(p.read_text(errors="replace").count("\n") for p in with_fixes)

        started = time.perf_counter()
        for p in with_fixes:
            lint_file(str(p), max_bytes=1_000_000)
        plain = time.perf_counter() - started

        options = FixOptions(unsafe=True)
        applied = Counter()
        problems = []
        changed = []
        started = time.perf_counter()
        originals = {}
        for p in with_fixes:
            originals[p] = text = p.read_text(errors="replace")
            result = fix_file(str(p), None, options, 1_000_000, None, write=True)
            applied.update(result.fixed)
            problems.extend(result.problems)
            if p.read_text(errors="replace") != text:
                changed.append(p)
        fixing = time.perf_counter() - started

        broken = []
        for p in changed:
            what = damage(p, originals[p], p.read_text())
            if what is not None:
                broken.append(f"{p}: {what}")
            fixed = p.read_bytes()
            fix_file(str(p), None, options, 1_000_000, None, write=True)
            if p.read_bytes() != fixed:
                broken.append(f"{p}: fixing it again changed it")
        after = Counter()
        still_fixable = []
        for p in files:
            for f in lint_file(str(p), max_bytes=1_000_000, edits=True).findings:
                after[f.code] += 1
                if f.fix is not None:
                    where = f.line if f.cell is None else f"cell {f.cell}:{f.line}"
                    still_fixable.append(f"{p.relative_to(copy)}:{where}: {f.code} {f.fix.description}")

        print(f"== {tree} ({len(files)} files)")
        print(
            f"findings before: {sum(findings.values())}  with a fix: {fixable['safe']} safe, {fixable['unsafe']} unsafe"
        )
        print(f"fixes applied: {sum(applied.values())} in {len(changed)} files  {dict(sorted(applied.items()))}")
        print(f"findings after: {sum(after.values())}  (before by rule {dict(sorted(findings.items()))})")
        print(f"                                 (after by rule  {dict(sorted(after.items()))})")
        print(f"changed files that do not parse or compile, or are damaged, or change again: {len(broken)}")
        for line in broken:
            print("  " + line)
        print(f"findings after that still carry a fix: {len(still_fixable)}")
        for line in still_fixable:
            print("  " + line)
        print(f"fixes skipped (and why): {len(problems)}")
        for line in problems:
            print("  " + line)
        if lines:
            print(
                f"--fix throughput on the {len(with_fixes)} files with fixes ({lines} lines): "
                f"{lines / fixing:,.0f} lines/s (plain lint of the same files: {lines / plain:,.0f} lines/s)"
            )
        return not broken and not still_fixable


def main(argv: list[str]) -> int:
    ok = True
    for tree in argv or ["tests/corpus"]:
        ok &= run(Path(tree))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
