"""Export fetched snapshots into plain trees for ``corpus.py extract``.

    python export_snapshots.py MIRRORS OUT owner+name [owner+name ...]

For each ``MIRRORS/owner+name/repo`` (a bare repository, or a checkout whose ``.git`` holds it), write every
``.py`` and ``.ipynb`` of ``HEAD`` into ``OUT/owner+name/``, leaving out blobs the snapshot lacks and files of
4 MiB or more (as every heldout draw records). Paths are read NUL-separated, so non-ASCII names come out whole.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

LIMIT = 4 * 1024 * 1024


def export(gitdir: Path, out: Path) -> int:
    """Write the snapshot's sources under ``out``; the number of files left out."""
    listing = subprocess.run(
        ["git", "--git-dir", str(gitdir), "ls-tree", "-r", "-l", "-z", "HEAD"], capture_output=True, text=True
    ).stdout
    skipped = 0
    for entry in filter(None, listing.split("\0")):
        meta, path = entry.split("\t", 1)
        _, kind, sha, size = meta.split()
        if kind != "blob" or not path.endswith((".py", ".ipynb")):
            continue
        if not size.isdigit() or int(size) >= LIMIT:
            skipped += 1
            continue
        blob = subprocess.run(["git", "--git-dir", str(gitdir), "cat-file", "blob", sha], capture_output=True)
        if blob.returncode:
            skipped += 1
            continue
        dest = out / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(blob.stdout)
    out.mkdir(parents=True, exist_ok=True)
    return skipped


def main() -> None:
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    mirrors, out = Path(sys.argv[1]), Path(sys.argv[2])
    for name in sys.argv[3:]:
        repo = mirrors / name / "repo"
        gitdir = repo / ".git" if (repo / ".git").exists() else repo
        skipped = export(gitdir, out / name)
        if skipped:
            print(f"{name}: left out {skipped}")


if __name__ == "__main__":
    main()
