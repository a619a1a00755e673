"""Which files a run lints: ``*.py`` and ``*.ipynb`` (the ``include`` patterns) under the given
directories, minus excluded names, virtual environments and what git ignores; files named
explicitly are linted whatever their suffix, unless the user's own excludes name them."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase

from torchlint.engine.config import ConfigError, Settings, glob_match
from torchlint.engine.gitignore import GitIgnore


@dataclass(frozen=True)
class Target:
    """One file to lint: the path as reported, and the settings that apply to it."""

    path: str
    settings: Settings
    # Set when discovery already knows the file cannot be read (an unreadable directory).
    error: str | None = None
    # Set for a file named on the command line that the user's excludes leave out: the pattern.
    excluded_by: str | None = None


def is_virtualenv(directory: str) -> bool:
    """A virtual environment under any name (``python -m venv`` and virtualenv write pyvenv.cfg)."""
    return os.path.isfile(os.path.join(directory, "pyvenv.cfg"))


def exclusion(path: str, settings: Settings, patterns: tuple[str, ...]) -> str | None:
    """The first of ``patterns`` that excludes ``path``, or None."""
    if not patterns:
        return None
    rel = settings.relative(path)
    if rel is None:  # outside the config root: only the name can match
        rel = os.path.basename(os.path.abspath(path))
    return next((pattern for pattern in patterns if glob_match(rel, pattern)), None)


def excluded(path: str, settings: Settings, patterns: tuple[str, ...]) -> bool:
    return exclusion(path, settings, patterns) is not None


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


def discover(
    paths: list[str], settings_for: Callable[[str], Settings], gitignore: GitIgnore | None = None
) -> Iterator[Target]:
    """Every file to lint under ``paths``, in argument order and sorted within directories, each once.
    ``gitignore``: skip what git ignores while walking directories (where the settings say so).

    Raises ConfigError for a path that does not exist (before anything is linted: callers
    should materialise the list first)."""
    for path in paths:
        if not os.path.lexists(path):
            raise ConfigError(f"path not found: {path}")
    seen: set[str] = set()
    for path in paths:
        for target in _discover_one(path, settings_for, gitignore):
            key = os.path.realpath(target.path)
            if key not in seen:
                seen.add(key)
                yield target


def _discover_one(path: str, settings_for: Callable[[str], Settings], gitignore: GitIgnore | None) -> Iterator[Target]:
    if not os.path.isdir(path):
        settings = settings_for(path)
        # A file named on the command line (as pre-commit does) still honours the user's excludes.
        yield Target(path, settings, excluded_by=exclusion(path, settings, settings.user_excludes))
        return
    yield from _walk(path, settings_for, gitignore)


def _walk(directory: str, settings_for: Callable[[str], Settings], gitignore: GitIgnore | None) -> Iterator[Target]:
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
            if _matches_entry(child, entry.name, settings, excludes) or is_virtualenv(child):
                continue
            if not _git_ignores(gitignore, settings, child, True):
                yield from _walk(child, settings_for, gitignore)
        elif (
            _matches_entry(child, entry.name, settings, includes)
            and not _matches_entry(child, entry.name, settings, excludes)
            and not _git_ignores(gitignore, settings, child, False)
        ):
            yield Target(child, settings)


def _git_ignores(gitignore: GitIgnore | None, settings: Settings, path: str, is_dir: bool) -> bool:
    return gitignore is not None and settings.respect_gitignore and gitignore.is_ignored(path, is_dir)
