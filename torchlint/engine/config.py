"""``[tool.torchlint]`` configuration: where it is found, what it may say, and which rules it enables.

Each linted path uses the nearest ``pyproject.toml`` above it that has a
``[tool.torchlint]`` table (or the one file given with ``--config``). Keys:

    select = ["TL0"]                 # codes, prefixes or rule names to enable (default: all)
    extend-select = ["TL021"]        # added to select
    ignore = ["TL008"]               # codes, prefixes or rule names to disable
    extend-exclude = ["legacy/*.py"] # added to the excluded names
    exclude = ["generated"]          # replaces the default excluded names (see files.py)
    extend-include = ["*.pyw"]       # more files to lint in directories (default: *.py, *.ipynb)
    include = ["*.py"]               # replaces the default included files
    respect-gitignore = false        # lint what .gitignore files name too (default: true)
    cache-dir = ".cache/torchlint"   # where the result cache lives (default: .torchlint_cache)
    per-file-ignores = { "tests/*" = ["TL001"] }
    fix = true                       # apply safe fixes, as --fix does
    unsafe-fixes = true              # also unsafe ones (--unsafe-fixes)
    fixable = ["TL0"]                # codes or prefixes whose fixes may be applied (default: all)
    unfixable = ["TL013"]            # codes or prefixes whose fixes are never applied

Command-line ``--select`` replaces the configured ``select`` and ``extend-select``;
``--extend-select`` adds to them; ``--ignore`` replaces ``ignore``. Between select and
ignore the more specific entry wins (``select = ["TL001"]`` with ``ignore = ["TL0"]``
keeps TL001); on a tie, ignore wins. ``TL000`` (files that cannot be read or parsed)
is on unless ignored.

Every problem raises :class:`ConfigError` with a one-line message that names the
file, the key and the bad value. Settings that are valid but almost certainly not
meant (``select = []``) are kept as ``Settings.warnings`` for the command to print.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from functools import cache
from pathlib import Path

KNOWN_KEYS = (
    "select",
    "extend-select",
    "ignore",
    "exclude",
    "extend-exclude",
    "include",
    "extend-include",
    "respect-gitignore",
    "cache-dir",
    "per-file-ignores",
    "fix",
    "unsafe-fixes",
    "fixable",
    "unfixable",
)
ALL = "ALL"
SYNTAX_CODE = "TL000"
_CODE_SHAPE = re.compile(r"^TL\d{0,3}$")


class ConfigError(Exception):
    """A usage or configuration error; the CLI prints it on one line and exits with status 2."""


def known_codes() -> tuple[str, ...]:
    from torchlint.engine.rule import all_rules

    return tuple(all_rules())


def codes_by_name() -> dict[str, str]:
    """``missing-zero-grad`` -> ``TL001``: everywhere a code is accepted, so is the rule's name."""
    from torchlint.engine.rule import all_rules

    return {rule.name: code for code, rule in all_rules().items()}


def normalize_code(raw: str) -> str | None:
    """A code, prefix, rule name or ``ALL`` as the code or prefix it stands for
    (``tl01`` -> ``TL01``, ``missing-zero-grad`` -> ``TL001``); None when it selects no rule."""
    value = raw.strip()
    by_name = codes_by_name()
    if value.lower() in by_name:
        return by_name[value.lower()]
    value = value.upper()
    if value == ALL:
        return ALL
    if _CODE_SHAPE.match(value) and any(code.startswith(value) for code in known_codes()):
        return value
    return None


def unknown_code_message(raw: str) -> str:
    """``unknown rule code or prefix 'TL999' (did you mean TL009?)``"""
    hint = difflib.get_close_matches(raw.strip().upper(), known_codes(), n=1) or difflib.get_close_matches(
        raw.strip().lower(), list(codes_by_name()), n=1
    )
    suggestion = f" (did you mean {hint[0]}?)" if hint else " (see `torchlint rules`)"
    return f"unknown rule code or prefix {raw!r}{suggestion}"


def validate_codes(values, where: str) -> tuple[str, ...]:
    """Normalise codes, prefixes and rule names (``tl01`` -> ``TL01``, ``missing-zero-grad`` ->
    ``TL001``); reject anything that selects no rule."""
    result = []
    for raw in values:
        if not isinstance(raw, str):
            raise ConfigError(f"{where}: expected rule codes as strings, got {raw!r}")
        value = normalize_code(raw)
        if value is None:
            raise ConfigError(f"{where}: {unknown_code_message(raw)}")
        result.append(value)
    return tuple(result)


def parse_code_list(text: str | list[str], option: str) -> tuple[str, ...]:
    """``--select TL001,TL0`` -> ("TL001", "TL0"), validated. A list holds the values of a
    repeated option (``--select TL001 --select TL016``), which add up."""
    texts = [text] if isinstance(text, str) else list(text)
    result: tuple[str, ...] = ()
    for one in texts:
        items = [item for item in re.split(r"[\s,]+", one) if item]
        if not items:
            raise ConfigError(f"{option}: expected a comma-separated list of rule codes, got {one!r}")
        result += validate_codes(items, option)
    return result


def _specificity(entry: str) -> int:
    return 0 if entry == ALL else len(entry)


def _matches(code: str, entry: str) -> bool:
    return entry == ALL or code.startswith(entry)


def resolve(select: tuple[str, ...] | None, ignore: tuple[str, ...] | None) -> frozenset[str]:
    """The enabled codes: for each code the most specific matching entry decides; ties go to ignore."""
    select = (ALL,) if select is None else select
    ignore = () if ignore is None else ignore
    enabled = set()
    for code in known_codes():
        best_select = max((_specificity(e) for e in select if _matches(code, e)), default=-1)
        best_ignore = max((_specificity(e) for e in ignore if _matches(code, e)), default=-1)
        if code == SYNTAX_CODE:
            # Unreadable files must not pass silently because of a narrow --select.
            if best_ignore < 0 or best_ignore < best_select:
                enabled.add(code)
        elif best_select >= 0 and best_select > best_ignore:
            enabled.add(code)
    return frozenset(enabled)


# Skipped while recursing into directories; `exclude` in the config replaces this list,
# `extend-exclude` adds to it.
DEFAULT_EXCLUDE = (
    ".git",
    ".hg",
    ".svn",
    ".bzr",
    ".venv",
    "venv",
    ".env",
    ".tox",
    ".nox",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".torchlint_cache",
    ".ipynb_checkpoints",
    ".eggs",
    "*.egg-info",
    "build",
    "dist",
    "_build",
    "site-packages",
    "node_modules",
    "__pypackages__",
)


# The files linted while recursing into directories; `include` replaces, `extend-include` adds.
DEFAULT_INCLUDE = ("*.py", "*.ipynb")


@dataclass(frozen=True)
class Settings:
    """Effective settings for the files under ``root``."""

    root: Path
    source: Path | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    exclude: tuple[str, ...] | None = None  # None: the built-in defaults
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    include: tuple[str, ...] | None = None  # None: the built-in defaults
    extend_include: tuple[str, ...] = ()
    respect_gitignore: bool = True
    cache_dir: Path | None = None  # absolute; None: .torchlint_cache in ``root``
    # Valid but almost certainly not what the user meant; the command prints each once.
    warnings: tuple[str, ...] = field(default=(), compare=False)
    fix: bool | None = None  # None: not configured (the command line decides)
    unsafe_fixes: bool | None = None
    fixable: tuple[str, ...] | None = None
    unfixable: tuple[str, ...] = ()
    _cache: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def user_excludes(self) -> tuple[str, ...]:
        """Only the patterns the user configured (applied even to files named on the command line)."""
        return (self.exclude or ()) + self.extend_exclude

    def excludes(self) -> tuple[str, ...]:
        return (DEFAULT_EXCLUDE if self.exclude is None else self.exclude) + self.extend_exclude

    def includes(self) -> tuple[str, ...]:
        return (DEFAULT_INCLUDE if self.include is None else self.include) + self.extend_include

    def with_overrides(self, select=None, ignore=None, extend_select=(), respect_gitignore=None) -> Settings:
        """The command line's options on top: ``--select`` replaces ``select`` and ``extend-select``
        (as in ruff), ``--extend-select`` adds, ``--ignore`` replaces ``ignore``,
        ``--no-respect-gitignore`` turns ``respect-gitignore`` off."""
        changes = {}
        if respect_gitignore is not None:
            changes["respect_gitignore"] = respect_gitignore
        if select is not None:
            changes["select"] = select
            changes["extend_select"] = tuple(extend_select)
        elif extend_select:
            changes["extend_select"] = self.extend_select + tuple(extend_select)
        if ignore is not None:
            changes["ignore"] = ignore
        return replace(self, _cache={}, **changes) if changes else self

    def enabled_codes(self) -> frozenset[str]:
        if "enabled" not in self._cache:
            select = self.select
            if self.extend_select:
                select = (ALL,) + self.extend_select if select is None else select + self.extend_select
            self._cache["enabled"] = resolve(select, self.ignore)
        return self._cache["enabled"]

    def fixable_codes(self) -> frozenset[str]:
        """Codes whose fixes may be applied (``fixable`` and ``unfixable``, the more specific entry winning)."""
        if "fixable" not in self._cache:
            self._cache["fixable"] = resolve(self.fixable, self.unfixable)
        return self._cache["fixable"]

    def relative(self, path: str | os.PathLike) -> str | None:
        """``path`` relative to the config root, in POSIX form; None when outside it."""
        try:
            rel = Path(os.path.abspath(path)).relative_to(self.root)
        except ValueError:
            return None
        return rel.as_posix()

    def codes_for(self, path: str) -> frozenset[str]:
        """Enabled codes for one file, after ``per-file-ignores``."""
        enabled = self.enabled_codes()
        if not self.per_file_ignores:
            return enabled
        rel = self.relative(path) or Path(path).as_posix()
        ignored = [codes for pattern, codes in self.per_file_ignores if glob_match(rel, pattern)]
        if not ignored:
            return enabled
        return frozenset(c for c in enabled if not any(_matches(c, e) for codes in ignored for e in codes))


def glob_match(rel_path: str, pattern: str) -> bool:
    """Match a POSIX relative path: patterns without ``/`` match any path component's name,
    patterns with ``/`` match the path from the config root (``*`` may cross ``/``;
    a leading ``**/`` also matches at the root; a directory pattern matches everything below)."""
    pattern = pattern.strip()
    if pattern.startswith("./"):
        pattern = pattern[2:]
    pattern = pattern.rstrip("/")
    if not pattern:
        return False
    parts = rel_path.split("/")
    if "/" not in pattern:
        return any(fnmatchcase(part, pattern) for part in parts)
    candidates = [pattern]
    if pattern.startswith("**/"):
        candidates.append(pattern[3:])
    for i in range(1, len(parts) + 1):
        prefix = "/".join(parts[:i])
        if any(fnmatchcase(prefix, c) for c in candidates):
            return True
    return False


# ----- reading files ------------------------------------------------------------------------


def _load_toml(path: Path) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"cannot parse config file {path}: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"cannot parse config file {path}: it is not UTF-8") from None


def _string_list(value, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of strings, got {value!r}")
    return tuple(value)


def settings_from_table(table: dict, source: Path, root: Path) -> Settings:
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: [tool.torchlint] must be a table")
    for key in table:
        if key not in KNOWN_KEYS:
            hint = difflib.get_close_matches(key, KNOWN_KEYS, n=1)
            suggestion = f" (did you mean {hint[0]!r}?)" if hint else f" (known keys: {', '.join(KNOWN_KEYS)})"
            raise ConfigError(f"{source}: unknown key {key!r} in [tool.torchlint]{suggestion}")
    where = f"{source}: [tool.torchlint]"
    select = ignore = exclude = None
    warnings = []
    if "select" in table:
        select = validate_codes(_string_list(table["select"], f"{where} select"), f"{where} select")
        if not select:
            warnings.append(
                f"{where} select = [] enables no rule (only TL000 for files that cannot be parsed);"
                " remove the key to enable every rule"
            )
    extend_select = validate_codes(
        _string_list(table.get("extend-select", []), f"{where} extend-select"), f"{where} extend-select"
    )
    if "ignore" in table:
        ignore = validate_codes(_string_list(table["ignore"], f"{where} ignore"), f"{where} ignore")
    if "exclude" in table:
        exclude = _string_list(table["exclude"], f"{where} exclude")
    extend_exclude = _string_list(table.get("extend-exclude", []), f"{where} extend-exclude")
    include = _string_list(table["include"], f"{where} include") if "include" in table else None
    extend_include = _string_list(table.get("extend-include", []), f"{where} extend-include")
    cache_dir = None
    if "cache-dir" in table:
        if not isinstance(table["cache-dir"], str) or not table["cache-dir"].strip():
            raise ConfigError(f"{where} cache-dir must be a folder name, got {table['cache-dir']!r}")
        cache_dir = Path(os.path.abspath(os.path.join(root, os.path.expanduser(table["cache-dir"]))))
    respect_gitignore = table.get("respect-gitignore", True)
    if not isinstance(respect_gitignore, bool):
        raise ConfigError(f"{where} respect-gitignore must be true or false, got {respect_gitignore!r}")
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(f"{where} per-file-ignores must be a table of glob = [codes], got {per_file!r}")
    per_file_ignores = tuple(
        (
            pattern,
            validate_codes(
                _string_list(codes, f"{where} per-file-ignores {pattern!r}"), f"{where} per-file-ignores {pattern!r}"
            ),
        )
        for pattern, codes in per_file.items()
    )
    fix = _boolean(table, "fix", where)
    unsafe_fixes = _boolean(table, "unsafe-fixes", where)
    fixable = None
    if "fixable" in table:
        fixable = validate_codes(_string_list(table["fixable"], f"{where} fixable"), f"{where} fixable")
    unfixable = validate_codes(_string_list(table.get("unfixable", []), f"{where} unfixable"), f"{where} unfixable")
    return Settings(
        root,
        source,
        select,
        ignore,
        extend_select,
        exclude,
        extend_exclude,
        per_file_ignores,
        include,
        extend_include,
        respect_gitignore,
        cache_dir,
        tuple(warnings),
        fix,
        unsafe_fixes,
        fixable,
        unfixable,
    )


def _boolean(table: dict, key: str, where: str) -> bool | None:
    if key not in table:
        return None
    value = table[key]
    if not isinstance(value, bool):
        raise ConfigError(f"{where} {key} must be true or false, got {value!r}")
    return value


def load_config_file(path: str | os.PathLike) -> Settings:
    """Settings from an explicit ``--config`` file: a pyproject.toml (its ``[tool.torchlint]``
    table) or any other TOML file holding the keys at top level (or under ``[tool.torchlint]``)."""
    path = Path(os.path.abspath(path))
    if not path.exists():
        raise ConfigError(f"--config: no such file: {path}")
    data = _load_toml(path)
    tool = data.get("tool", {})
    if isinstance(tool, dict) and "torchlint" in tool:
        table = tool["torchlint"]
    elif path.name == "pyproject.toml":
        raise ConfigError(f"--config: {path} has no [tool.torchlint] table")
    else:
        table = {k: v for k, v in data.items() if k != "tool"}
    return settings_from_table(table, path, path.parent)


@cache
def _pyproject_settings(directory: Path) -> Settings | None:
    candidate = directory / "pyproject.toml"
    if not candidate.is_file():
        return None
    data = _load_toml(candidate)
    tool = data.get("tool")
    if not isinstance(tool, dict) or "torchlint" not in tool:
        return None
    return settings_from_table(tool["torchlint"], candidate, directory)


@cache
def _nearest(directory: Path) -> Settings:
    found = _pyproject_settings(directory)
    if found is not None:
        return found
    if directory.parent == directory:
        return Settings(root=Path(os.getcwd()))
    return _nearest(directory.parent)


def find_settings(path: str | os.PathLike) -> Settings:
    """Settings for ``path`` from the nearest ``pyproject.toml`` with a ``[tool.torchlint]`` table
    above it; defaults (rooted at the working directory) when there is none."""
    absolute = Path(os.path.abspath(path))
    directory = absolute if absolute.is_dir() else absolute.parent
    return _nearest(directory)


def clear_cache() -> None:
    _pyproject_settings.cache_clear()
    _nearest.cache_clear()


class SettingsResolver:
    """Per-directory settings with the command-line overrides applied, cached."""

    def __init__(
        self, config_file: str | None = None, select=None, ignore=None, extend_select=(), respect_gitignore=None
    ):
        self.fixed = load_config_file(config_file) if config_file else None
        self.select = select
        self.ignore = ignore
        self.extend_select = extend_select
        self.respect_gitignore = respect_gitignore
        self._applied: dict[int, Settings] = {}
        # The warnings of every configuration used so far, each once, in the order met.
        self.warnings: list[str] = []

    def for_path(self, path: str | os.PathLike) -> Settings:
        base = self.fixed if self.fixed is not None else find_settings(path)
        key = id(base)
        if key not in self._applied:
            self._applied[key] = base.with_overrides(
                self.select, self.ignore, self.extend_select, self.respect_gitignore
            )
            self.warnings += [w for w in base.warnings if w not in self.warnings]
        return self._applied[key]
