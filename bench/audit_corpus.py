"""Lint a corpus of real training code and summarise the findings per rule.

Used for the false-alarm audits: point it at checkouts of public projects
(e.g. pytorch/examples, nanoGPT, accelerate, timm, Lightning, detectron2) and
triage every finding it lists.

    python bench/audit_corpus.py /path/to/corpus [more paths] [--select TL001,TL002] [--list]

Only files that import torch are linted, as a training-code linter would be
pointed at them. Prints files, lines, seconds, findings per rule, and with
``--list`` every finding as ``path:line: CODE message``.
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import re
import sys
import time

from torchlint.engine.lint import lint_source
from torchlint.engine.rule import all_rules

IMPORTS_TORCH = re.compile(r"^\s*(import torch|from torch[\s.])", re.M)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=pathlib.Path)
    parser.add_argument("--select", default="", help="comma-separated rule codes (default: all)")
    parser.add_argument("--list", action="store_true", help="print every finding")
    args = parser.parse_args(argv)
    registry = all_rules()
    codes = [c.strip() for c in args.select.split(",") if c.strip()] or list(registry)
    unknown = [c for c in codes if c not in registry]
    if unknown:
        parser.error(f"unknown rule code(s): {', '.join(unknown)}")
    rules = [registry[c] for c in codes]

    files = lines = 0
    per_rule: collections.Counter[str] = collections.Counter()
    listing = []
    elapsed = 0.0
    for root in args.paths:
        for path in sorted(root.rglob("*.py") if root.is_dir() else [root]):
            source = path.read_text(encoding="utf-8", errors="replace")
            if not IMPORTS_TORCH.search(source):
                continue
            files += 1
            lines += source.count("\n") + 1
            start = time.perf_counter()
            findings = lint_source(source, str(path), rules)
            elapsed += time.perf_counter() - start
            for f in findings:
                per_rule[f.code] += 1
                listing.append(f"{f.path}:{f.line}: {f.code} {f.message}")
    if args.list:
        print("\n".join(listing))
    print(f"{files} files, {lines} lines linted in {elapsed:.2f} s ({lines / max(elapsed, 1e-9):,.0f} lines/s)")
    for code in codes:
        print(f"  {code} {registry[code].name}: {per_rule[code]}")
    print(f"  total: {sum(per_rule.values())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
