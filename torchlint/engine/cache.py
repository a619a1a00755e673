"""A content-hash cache of lint results, so re-linting unchanged files costs almost nothing.

One JSON entry per linted file in ``.torchlint_cache/`` (or ``cache-dir``), named after the
file's path (and what its fixes must carry: a JSON report wants their edits, a text one not). An entry is reused only when all of these are what they were when it was
written, and is otherwise linted again and overwritten:

* the file's bytes (SHA-256 of the content; timestamps play no part),
* the settings that shape its findings (enabled codes after per-file-ignores, the size limit,
  whether fixes carry their edits, which fixes are allowed),
  the name it is reported under, the Python version (its parser) and torchlint itself (the
  version and a fingerprint of the linter's own source files, so an edited checkout never
  reuses stale results),
* the contents of every other project file the lint consulted (``FileResult.dependencies``,
  cross-file summaries): change an imported module and its importers are linted again; and the
  listing of every project folder it consulted (a search for the callers of a function in the
  whole project, ``analysis.callers``): add a file there and the result is computed again.

Entries are written to a temporary file and renamed into place, so concurrent runs and
``--jobs`` workers never see half an entry; an entry that cannot be read or parsed is a miss,
never an error. JSON, not pickle: a cache folder that came with a repository must not be able
to run code.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from functools import cache
from pathlib import Path

from torchlint.engine.finding import Finding
from torchlint.engine.lint import FileResult
from torchlint.engine.notebook import NotebookIndex

DEFAULT_DIRECTORY = ".torchlint_cache"
# Bump when the entry layout changes.
FORMAT = 1
# What a missing dependency hashes to, so that creating it invalidates its dependents.
ABSENT = "absent"


@cache
def linter_fingerprint() -> str:
    """torchlint's version plus the size and modification time of its linter source files."""
    from torchlint import __version__

    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256(f"{FORMAT}:{__version__}:{sys.version_info[:2]}".encode())
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        if relative.startswith("sanitizer/"):  # the runtime half plays no part in a lint
            continue
        info = path.stat()
        digest.update(f"{relative}:{info.st_size}:{info.st_mtime_ns}".encode())
    return digest.hexdigest()


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class LintCache:
    """Lookups and stores for one run. ``problems`` collects one-line warnings (an unwritable
    folder) for the command to print; the run goes on without the cache."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        self.problems: list[str] = []
        self.hits = self.misses = 0
        self._writable: bool | None = None
        self._file_hashes: dict[str, str] = {}  # dependencies met in this run

    # ----- keys -------------------------------------------------------------------------------

    def key(self, path: str, data: bytes, codes: frozenset, max_bytes: int, fix_plan=None) -> str:
        """Everything a lint result depends on besides other files: the bytes, the rules in force,
        the size limit, what the fixes should carry (``fix_plan``, JSON-able), the reported name, torchlint."""
        settings = json.dumps([linter_fingerprint(), path, sorted(codes), max_bytes, fix_plan])
        return hashlib.sha256(settings.encode() + b"\0" + data).hexdigest()

    def _entry_path(self, path: str, variant: str) -> Path:
        name = hashlib.sha256("\0".join([os.path.realpath(path), path, variant]).encode()).hexdigest()
        return self.directory / name[:2] / f"{name[2:]}.json"

    def _dependency_hash(self, path: str) -> str:
        if path not in self._file_hashes:
            try:
                if os.path.isdir(path):
                    # A folder consulted for what it holds (who calls a function): its listing,
                    # less hidden entries (this cache's own folder among them), which are not searched.
                    names = sorted(name for name in os.listdir(path) if not name.startswith("."))
                    self._file_hashes[path] = content_hash("\0".join(names).encode())
                    return self._file_hashes[path]
                with open(path, "rb") as handle:
                    self._file_hashes[path] = content_hash(handle.read())
            except OSError:
                self._file_hashes[path] = ABSENT
        return self._file_hashes[path]

    # ----- lookups and stores -----------------------------------------------------------------

    def get(self, path: str, key: str, variant: str = "") -> FileResult | None:
        """The stored result for ``path`` under ``key``, if its dependencies are unchanged.
        ``variant`` keeps apart entries of one file that runs keep alternating (text and JSON)."""
        try:
            with open(self._entry_path(path, variant), encoding="utf-8") as handle:
                entry = json.load(handle)
            if entry.get("key") != key:
                raise LookupError
            if any(self._dependency_hash(dep) != digest for dep, digest in entry["dependencies"].items()):
                raise LookupError
            result = _result_from_json(entry["result"])
        except Exception:  # missing, stale, truncated or hand-edited: lint the file again
            self.misses += 1
            return None
        self.hits += 1
        return result

    def put(self, path: str, key: str, result: FileResult, variant: str = "") -> None:
        if not result.cacheable or self._writable is False:
            return
        entry = {
            "key": key,
            "dependencies": {dep: self._dependency_hash(dep) for dep in result.dependencies},
            "result": _result_to_json(result),
        }
        target = self._entry_path(path, variant)
        try:
            self._prepare()
            target.parent.mkdir(exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as stream:
                    json.dump(entry, stream, ensure_ascii=False, separators=(",", ":"))
                os.replace(temporary, target)  # atomic: readers see the old entry or the new one
            except BaseException:
                _remove(temporary)
                raise
        except OSError as exc:
            self._writable = False
            self.problems.append(
                f"cannot write the cache in {self.directory} ({exc.strerror or exc}); linting without it"
            )

    def _prepare(self) -> None:
        """Create the folder, marked so that git, backups and ruff leave it alone."""
        if self._writable:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        for name, text in (
            (".gitignore", "# Created by torchlint automatically.\n*\n"),
            ("CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n# Created by torchlint.\n"),
        ):
            marker = self.directory / name
            if not marker.exists():
                marker.write_text(text, encoding="utf-8")
        self._writable = True


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


# ----- results as JSON ------------------------------------------------------------------------


def _result_to_json(result: FileResult) -> dict:
    return {
        "path": result.path,
        "findings": [f.to_dict() for f in result.findings],
        "source_lines": [
            [key if isinstance(key, int) else list(key), text] for key, text in result.source_lines.items()
        ],
        "problems": result.problems,
        "line_count": result.line_count,
        "skipped": result.skipped,
        "notebook": result.notebook.to_json() if result.notebook is not None else None,
        "dependencies": list(result.dependencies),
    }


def _result_from_json(data: dict) -> FileResult:
    return FileResult(
        data["path"],
        findings=[Finding.from_dict(f) for f in data["findings"]],
        source_lines={key if isinstance(key, int) else tuple(key): text for key, text in data["source_lines"]},
        problems=list(data["problems"]),
        line_count=data["line_count"],
        skipped=data["skipped"],
        notebook=NotebookIndex.from_json(data["notebook"]) if data["notebook"] is not None else None,
        dependencies=tuple(data["dependencies"]),
    )
