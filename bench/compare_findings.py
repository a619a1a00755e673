"""Prove that a change keeps the linter's behaviour: compare a tree's findings with a saved baseline.

    python bench/compare_findings.py save TREE BASELINE.json [--torchlint CMD]
    python bench/compare_findings.py check TREE BASELINE.json [--torchlint CMD]

``save`` lints TREE and writes every finding (the ``--format json`` objects, paths relative to
TREE, sorted) to BASELINE.json. ``check`` lints TREE again and prints the findings added and
removed against BASELINE.json as ``+ path:line: CODE message`` / ``- path:line: CODE message``;
it exits 1 when there is any difference, 0 when the findings are identical, 2 when the tree, the
linter or the baseline cannot be used.

TREE is linted as one directory from inside it (``cd TREE && torchlint .``), so the reported paths
do not depend on where the tree lies (the folder names above it, such as ``tests/``, cannot change
a finding) and rules that share knowledge across the files of a project see the whole tree.
CMD (default: the ``torchlint`` of this interpreter) is split like a shell command line; point it
at a frozen copy of the linter to save a "before" baseline, and add options such as
``--config FILE`` to it.

Two findings are the same when path, line, code and message agree; columns and fixes are kept in
the baseline file but not compared.
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import shlex
import subprocess
import sys

DEFAULT_TORCHLINT = f"{shlex.quote(sys.executable)} -m torchlint"
Key = tuple[str, int, str, str]
KEY_FIELDS = {"path", "line", "code", "message"}


class CompareError(Exception):
    """A tree, linter or baseline that cannot be used: reported on one line, exit status 2."""


def lint_tree(tree: pathlib.Path, torchlint: str) -> list[dict]:
    """Every finding of ``torchlint`` on ``tree``, paths relative to it, in a stable order."""
    if not tree.is_dir():
        raise CompareError(f"{tree} is not a directory")
    cmd = [*shlex.split(torchlint), "--format", "json", "--exit-zero", "."]
    proc = subprocess.run(cmd, cwd=tree, capture_output=True, text=True)
    if proc.returncode != 0:
        raise CompareError(f"`{shlex.join(cmd)}` failed in {tree} (status {proc.returncode}): {proc.stderr.strip()}")
    sys.stderr.write(proc.stderr)
    try:
        findings = json.loads(proc.stdout)
    except ValueError as error:
        raise CompareError(f"`{shlex.join(cmd)}` did not print JSON: {error}") from None
    for finding in findings:
        finding["path"] = pathlib.PurePath(finding["path"]).as_posix().removeprefix("./")
    return sorted(findings, key=lambda f: (f["path"], f["line"], f["column"], f["code"], f["message"]))


def key(finding: dict) -> Key:
    return finding["path"], finding["line"], finding["code"], finding["message"]


def difference(before: list[dict], after: list[dict]) -> tuple[list[Key], list[Key]]:
    """(added, removed): findings of ``after`` not in ``before`` and the reverse, counted as multisets."""
    old = collections.Counter(map(key, before))
    new = collections.Counter(map(key, after))
    return sorted((new - old).elements()), sorted((old - new).elements())


def save(tree: pathlib.Path, baseline: pathlib.Path, torchlint: str) -> int:
    findings = lint_tree(tree, torchlint)
    baseline.parent.mkdir(parents=True, exist_ok=True)
    baseline.write_text(json.dumps(findings, indent=1) + "\n")
    print(f"{len(findings)} findings of {tree} saved to {baseline}")
    return 0


def check(tree: pathlib.Path, baseline: pathlib.Path, torchlint: str) -> int:
    try:
        before = json.loads(baseline.read_text())
    except (OSError, ValueError) as error:
        raise CompareError(f"cannot read the baseline {baseline}: {error}") from None
    if not isinstance(before, list) or not all(isinstance(f, dict) and f.keys() >= KEY_FIELDS for f in before):
        raise CompareError(f"{baseline} is not a list of findings as `save` writes them")
    added, removed = difference(before, lint_tree(tree, torchlint))
    for sign, keys in (("+", added), ("-", removed)):
        for path, line, code, message in keys:
            print(f"{sign} {path}:{line}: {code} {message}")
    verdict = "identical" if not (added or removed) else f"{len(added)} added, {len(removed)} removed"
    print(f"{tree}: {verdict} against {baseline} ({len(before)} findings in the baseline)")
    return 1 if added or removed else 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("save", "check"))
    parser.add_argument("tree", type=pathlib.Path, help="directory to lint")
    parser.add_argument("baseline", type=pathlib.Path, help="JSON file of saved findings")
    parser.add_argument("--torchlint", default=DEFAULT_TORCHLINT, help="linter command (default: %(default)s)")
    args = parser.parse_args(argv)
    action = save if args.action == "save" else check
    try:
        return action(args.tree, args.baseline, args.torchlint)
    except CompareError as error:
        print(f"compare_findings: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
