"""Which files a run lints: ``*.py`` and ``*.ipynb`` (the ``include`` patterns) under the given
directories, minus excluded names and virtual environments; files named explicitly are linted
whatever their suffix."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase

from torchlint.engine.config import ConfigError, Settings, glob_match


@dataclass(frozen=True)
class Target:
    """One file to lint: the path as reported, and the settings that apply to it."""

    path: str
    settings: Settings
    # Set when discovery already knows the file cannot be read (an unreadable directory).
    error: str | None = None


def is_virtualenv(directory: str) -> bool:
    """A virtual environment under any name (``python -m venv`` and virtualenv write pyvenv.cfg)."""
    return os.path.isfile(os.path.join(directory, "pyvenv.cfg"))


def excluded(path: str, settings: Settings, patterns: tuple[str, ...]) -> bool:
    if not patterns:
        return False
    rel = settings.relative(path)
    if rel is None:  # outside the config root: only the name can match
        rel = os.path.basename(os.path.abspath(path))
    return any(glob_match(rel, pattern) for pattern in patterns)


def _matches_entry(path: str, name: str, settings: Settings, patterns: tuple[str, ...]) -> bool:
    """While walking: name patterns test this entry's own name (the directories above it were
    tested on the way down, and a directory named on the command line is linted as asked)."""
    rel = None
    for pattern in patterns:
        if "/" not in pattern.strip().rstrip("/"):
            if fnmatchcase(name, pattern.strip().rstrip("/")):
                return True
            continue
        if rel is None:
            rel = settings.relative(path) or name
        if glob_match(rel, pattern):
            return True
    return False


def discover(paths: list[str], settings_for: Callable[[str], Settings]) -> Iterator[Target]:
    """Every file to lint under ``paths``, in argument order and sorted within directories, each once.

    Raises ConfigError for a path that does not exist (before anything is linted: callers
    should materialise the list first)."""
    for path in paths:
        if not os.path.lexists(path):
            raise ConfigError(f"path not found: {path}")
    seen: set[str] = set()
    for path in paths:
        for target in _discover_one(path, settings_for):
            key = os.path.realpath(target.path)
            if key not in seen:
                seen.add(key)
                yield target


def _discover_one(path: str, settings_for: Callable[[str], Settings]) -> Iterator[Target]:
    if not os.path.isdir(path):
        settings = settings_for(path)
        # A file named on the command line (as pre-commit does) still honours the user's excludes.
        if not excluded(path, settings, settings.user_excludes):
            yield Target(path, settings)
        return
    yield from _walk(path, settings_for)


def _walk(directory: str, settings_for: Callable[[str], Settings]) -> Iterator[Target]:
    """Depth-first in sorted name order, so a report reads like a sorted list of paths."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        # An unreadable directory: report it like a file that cannot be read, and go on.
        reason = "permission denied" if isinstance(exc, PermissionError) else (exc.strerror or str(exc))
        yield Target(directory, settings_for(directory), f"cannot read directory: {reason}")
        return
    settings = settings_for(directory)
    excludes, includes = settings.excludes(), settings.includes()
    for entry in entries:
        child = entry.path if directory != "." else entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            is_dir = False
        if is_dir:
            if not _matches_entry(child, entry.name, settings, excludes) and not is_virtualenv(child):
                yield from _walk(child, settings_for)
        elif _matches_entry(child, entry.name, settings, includes) and not _matches_entry(
            child, entry.name, settings, excludes
        ):
            yield Target(child, settings)
