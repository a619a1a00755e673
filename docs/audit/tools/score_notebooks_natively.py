"""Score a corpus as a user would lint it: notebooks as notebooks.

``corpus.py extract`` writes each notebook's code cells out as a script (cells joined by a blank line), so
the corpus lints an ``.ipynb`` as if it were a ``.py`` run with ``python file.py``. A user runs torchlint on
the notebook itself, where script-only rules (a main guard for DataLoader workers, say) do not apply. This
scores the corpus with every file that came from a notebook linted as that notebook instead, its findings
moved back to the extracted file's lines, against the same triage and with ``corpus.py score``'s matching
(same path and code within 3 lines). The plain score stays the one of record; this one says how much of it
is the extraction.

    python score_notebooks_natively.py CORPUS SOURCES TRIAGE [--torchlint CMD] [-v]

CORPUS: the extracted corpus (``stats.json`` inside); SOURCES: the folder of plain trees it was extracted
from (``SOURCES/<repo>/<path>.ipynb``).
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path


def lint(cmd: list[str], paths: list[Path]) -> list[dict]:
    found = []
    for start in range(0, len(paths), 200):
        proc = subprocess.run(
            [*cmd, "--format", "json", "--exit-zero", *map(str, paths[start : start + 200])],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            sys.exit(f"torchlint failed: {proc.stderr[-500:]}")
        found += json.loads(proc.stdout)
    return found


def code_cell_starts(notebook: Path) -> dict[int, int]:
    """Cell number (1-based, every cell counted, as torchlint reports it) -> first line of that code cell
    in the extracted script (cells joined by a blank line)."""
    starts, line = {}, 1
    for number, cell in enumerate(json.loads(notebook.read_bytes()).get("cells", []), start=1):
        if cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        src = "".join(src) if isinstance(src, list) else src
        starts[number] = line
        line += src.count("\n") + 2
    return starts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", type=Path)
    ap.add_argument("sources", type=Path)
    ap.add_argument("triage", type=Path)
    ap.add_argument("--torchlint", default="torchlint")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    cmd = shlex.split(a.torchlint)
    corpus = a.corpus.resolve()
    lines = sum(s["lines"] for s in json.loads((corpus / "stats.json").read_text()).values())

    scripts = sorted(p for p in corpus.rglob("*.py"))
    notebooks = {}
    for script in scripts:
        rel = script.relative_to(corpus)
        notebook = a.sources / rel.with_suffix(".ipynb")
        if notebook.exists() and not (a.sources / rel).exists():
            notebooks[str(rel)] = notebook
    found = []
    for d in lint(cmd, [corpus]):
        rel = str(Path(d["path"]).resolve().relative_to(corpus))
        if rel not in notebooks:
            found.append((rel, d["code"], d["line"], d["message"]))
    back = {str(nb.resolve()): rel for rel, nb in notebooks.items()}
    for d in lint(cmd, list(notebooks.values())):
        rel = back[str(Path(d["path"]).resolve())]
        starts = code_cell_starts(notebooks[rel])
        if d.get("cell") in starts:
            found.append((rel, d["code"], starts[d["cell"]] + d["line"] - 1, d["message"]))
    found = [f for f in found if f[1] != "TL000"]

    triage = json.loads(a.triage.read_text())
    counts = {"TRUE": 0, "FALSE": 0, "DEBATABLE": 0}
    kept, untriaged = set(), []
    for path, code, line, msg in found:
        near = [e for e in triage if e["path"] == path and e["code"] == code and abs(e["line"] - line) <= 3]
        if not near:
            untriaged.append((path, line, code, msg))
            continue
        e = min(near, key=lambda e: abs(e["line"] - line))
        counts[e["verdict"]] += 1
        if e["verdict"] == "TRUE":
            kept.add((e["path"], e["code"], e["line"]))
        if a.v and e["verdict"] == "FALSE":
            print(f"FALSE {path}:{line}: {code} {e.get('reason', '')[:100]}")
    for path, line, code, msg in untriaged:
        print(f"UNTRIAGED {path}:{line}: {code} {msg[:120]}")
    true_total = sum(1 for e in triage if e["verdict"] == "TRUE")
    fp = counts["FALSE"] + len(untriaged)
    print(
        f"notebooks as notebooks ({len(notebooks)} files): precision {counts['TRUE'] / max(1, counts['TRUE'] + fp):.2f} "
        f"(TRUE {counts['TRUE']}, FALSE {counts['FALSE']}, untriaged {len(untriaged)}, debatable {counts['DEBATABLE']}); "
        f"false per 100k lines {fp / max(1, lines) * 1e5:.1f}; true kept {len(kept)}/{true_total}; {lines} lines"
    )


if __name__ == "__main__":
    main()
