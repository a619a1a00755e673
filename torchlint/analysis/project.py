"""The other files of a project: which file an import names, and what it defines there.

A *project* is the tree of Python files under one root directory. The linter never imports or
runs anything: a module is found on disk the way Python's import system would find it, read,
parsed with ``ast`` and asked what it defines. Everything here is generic Python; what a
function means for PyTorch is left to ``torchmodel``, which keeps its per-function facts in
``project.summaries`` (see ``analysis.summaries``).

The root
    The nearest directory at or above the file that holds ``.git``, ``.hg``,
    ``pyproject.toml``, ``setup.py`` or ``setup.cfg``. Without one, the directory above the
    file's outermost package (the first directory up without an ``__init__.py``), i.e. the
    file's own directory for a script. The root depends only on where the file is, never on
    how the linter was called, so a directory lint and a lint of the files one by one give
    the same answers. Files inside ``site-packages``/``dist-packages`` have no project.

Resolution, as Python would do it
    * ``from .fp16_util import zero_grad``, ``from .. import models``: relative to the file's
      package directory (never above the root).
    * ``from pkg.util import f``, ``import pkg.util as u``, ``from utils import zero_grad``:
      searched in the importing file's directory (a script's sibling modules: Python puts the
      script's folder first on ``sys.path``), the directory above its outermost package, the
      root, and ``root/src``, in that order.
    * a regular package (``name/__init__.py``) before a module (``name.py``) before a namespace
      package (a directory without ``__init__.py``).
    * a name imported from a module is what that module binds at its top level
      (``definitions.module_names``): a ``def``/``class``, its own imports (re-exports through
      ``__init__.py`` are followed), plain aliases (``Net = ResNet``), star imports; else a
      submodule of a package.

Bounds (a cold lint of one file stays cheap whatever the project holds)
    * only files under the root, not in a virtual environment, ``site-packages``,
      ``dist-packages`` or ``node_modules``, and not reached through a symbolic link that leaves
      the root, are read;
    * a module over ``MAX_MODULE_BYTES`` is not read (treated as unknown), nor any module once
      ``MAX_MODULES`` different ones were read for one project in one process;
    * one lookup follows at most ``MAX_IMPORT_HOPS`` re-exports and aliases;
    * at most ``CACHED_MODULES`` parsed modules are kept for all the projects of a run together
      (``ParseCache``: least recently used first out; a module dropped is parsed again when asked
      for again); summaries stay for the whole run.
    A lookup cut short by a bound answers "unknown" (None), never a guess.

Dependencies
    Every module read for a lookup is recorded (``Recorder``); the engine wraps the lint of
    one file in ``project.recording(path)`` and reports the files it consulted as
    ``FileResult.dependencies``, including those read to compute summaries it reused.

API (small on purpose; ``analysis.callgraph.resolve_call`` builds "which function does this call
run" on it):
    ``Projects().for_file(path)`` -> the ``Project`` of a file, or None (one object per root).
    ``project.lookup(ctx, expr)`` -> ``Definition`` (function or class), ``Module``, or None:
        what a name or attribute chain of ``ctx`` names when it comes from an import or from the
        top level of ``ctx``'s file (``zero_grad``, ``u.f``, ``pkg.util.f``, ``Net``, ``Net.forward``).
    ``project.context(path)`` -> the parsed ``FileContext`` of a module (read once, shared).
    ``project.summaries``: the ``SummaryCache`` of the run (``analysis.summaries``).
    ``project.recording(path)``: context manager around one file's lint, yields the set of
        other files consulted.
"""

from __future__ import annotations

import ast
import os
import re
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from torchlint.analysis.context import FileContext
from torchlint.analysis.definitions import Definition, class_member, definition_at, file_key, module_names
from torchlint.analysis.imports import ImportBinding, dotted_name
from torchlint.analysis.search_path import added_search_dirs
from torchlint.analysis.source import UndecodableSource, decode_source
from torchlint.analysis.summaries import Recorder, SummaryCache

ROOT_MARKERS = (".git", ".hg", "pyproject.toml", "setup.py", "setup.cfg")
# Folders that hold installed or vendored code, never the project's own modules.
FOREIGN_DIRS = frozenset({"site-packages", "dist-packages", "node_modules", "__pycache__"})
MAX_MODULE_BYTES = 1_000_000
# How far above its own folder a script's ``sys.path`` addition may widen a project without a root marker.
MAX_SCRIPT_PATH_LEVELS = 3
MAX_MODULES = 2_000
MAX_IMPORT_HOPS = 8
# Parsed modules kept at once, for the whole run: each is ~0.5-1 MB with the facts computed on it
# (measured on the 378k-line audit tree: 256 kept -> 187 MB peak, 32 -> 96 MB at the same CPU time).
CACHED_MODULES = 32
# Per parsed module: the files its lookups consulted (see ``Project.context``).
_READ_FROM_HERE = "project_read_from_here"
_ADDED_SEARCH_DIRS = "project_added_search_dirs"


@dataclass(frozen=True)
class Module:
    """A module of the project: ``path`` is its file (``pkg/__init__.py`` for a package), or the
    directory of a namespace package (``file`` False); ``name`` is dotted from the root."""

    path: str
    name: str
    is_package: bool
    file: bool = True

    @property
    def directory(self) -> str:
        """Where its submodules live (packages) or its siblings (modules)."""
        return self.path if not self.file else os.path.dirname(self.path)


class ParseCache:
    """The parsed modules kept for lookups, least recently used first out, at most ``CACHED_MODULES``
    for all the projects of a run together (a tree of many projects -- a folder of examples, each
    with its own root -- keeps no more than one): a parsed module, with the facts computed on it,
    is what a run's memory grows with. A module dropped is released (``FileContext.release``)."""

    def __init__(self):
        self._entries: OrderedDict[str, FileContext | None] = OrderedDict()

    def get(self, path: str) -> tuple[bool, FileContext | None]:
        """(whether ``path`` is kept, its parsed module or None when it could not be read)."""
        if path not in self._entries:
            return False, None
        self._entries.move_to_end(path)
        return True, self._entries[path]

    def paths(self) -> list[str]:
        """The modules kept, least recently used first."""
        return list(self._entries)

    def put(self, path: str, ctx: FileContext | None) -> None:
        self._entries[path] = ctx
        while len(self._entries) > CACHED_MODULES:
            _, dropped = self._entries.popitem(last=False)
            if dropped is not None:
                dropped.release()  # frees its tree at once (see FileContext.release); rebuilt if asked again


class Projects:
    """The projects of one run, one per root, found from each linted file's path; they share one
    ``ParseCache``."""

    def __init__(self):
        self._by_root: dict[str, Project] = {}
        self._root_of_dir: dict[str, str] = {}
        self._marked_root_of_dir: dict[str, str | None] = {}
        self._holds_python_of_dir: dict[str, bool] = {}
        self.parsed = ParseCache()

    def for_file(self, path: str) -> Project | None:
        """The project of the file at ``path``; None for a file of installed code."""
        directory = os.path.dirname(os.path.realpath(path))
        if any(part in FOREIGN_DIRS for part in directory.split(os.sep)):
            return None
        return self._project(self._root(directory))

    def at_root(self, root: str) -> Project:
        """The project whose root is the directory ``root``."""
        return self._project(os.path.realpath(root))

    def _project(self, root: str) -> Project:
        """The project at the real path ``root``, made on first use."""
        project = self._by_root.get(root)
        if project is None:
            project = self._by_root[root] = Project(root, self.parsed, self)
        return project

    def _root(self, directory: str) -> str:
        """The nearest folder at or above ``directory`` with a root marker, else the folder above its
        outermost package. It depends only on where the file is, never on which files came first."""
        found = self._root_of_dir.get(directory)
        if found is None:
            marked = self._marked_root(directory)
            found = self._root_of_dir[directory] = marked if marked is not None else self._code_base(directory)
        return found

    def _code_base(self, directory: str) -> str:
        """Without a root marker: the directory above the outermost package holding ``directory``, raised
        through the folders above it that hold Python files themselves (a folder of scripts with
        sub-folders of helpers is one project, run from its top: ``python train.py`` importing
        ``misc.models``), up to the first folder with none."""
        found = package_base(directory)
        while True:
            parent = os.path.dirname(found)
            if parent == found or not self._holds_python(parent):
                return found
            found = parent

    def _holds_python(self, directory: str) -> bool:
        held = self._holds_python_of_dir.get(directory)
        if held is None:
            try:
                with os.scandir(directory) as entries:
                    held = any(e.name.endswith(".py") and e.is_file() for e in entries)
            except OSError:
                held = False
            self._holds_python_of_dir[directory] = held
        return held

    def _marked_root(self, directory: str) -> str | None:
        """The nearest folder at or above ``directory`` holding a root marker, None when none does.
        Every folder walked through is remembered with the answer, so siblings stop early; the package
        fallback is not remembered there, as it differs for each starting folder."""
        walked = []
        current, found = directory, None
        while True:
            if current in self._marked_root_of_dir:
                found = self._marked_root_of_dir[current]
                break
            walked.append(current)
            if any(os.path.exists(os.path.join(current, marker)) for marker in ROOT_MARKERS):
                found = current
                break
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        for seen in walked:
            self._marked_root_of_dir[seen] = found
        return found


def _levels_above(ancestor: str, directory: str) -> int | None:
    """How many folders ``ancestor`` is above ``directory`` (0: the same), None when it is not above it."""
    if directory == ancestor:
        return 0
    if not directory.startswith(ancestor.rstrip(os.sep) + os.sep):
        return None
    return os.path.relpath(directory, ancestor).count(os.sep) + 1


def package_base(directory: str) -> str:
    """The directory above the outermost package holding ``directory`` (itself for a script folder)."""
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return directory


def _checkout_above(tree: ast.Module, here: str, root: str) -> list[str]:
    """The folder just above ``root`` when a top-level absolute import of the module names a
    package (``name/__init__.py``) there that is neither in ``here`` nor in ``root``, or a dotted
    module whose whole path is a file there (``from data.loaders.audio import X`` with
    ``data/loaders/audio.py``: folders without ``__init__.py`` are namespace packages; not for a
    module that touches ``sys.path``)."""
    parent = os.path.dirname(root)
    for node in tree.body:
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".", 1)[0]
            if any(
                os.path.exists(os.path.join(d, top)) or os.path.exists(os.path.join(d, top + ".py"))
                for d in (here, root)
            ):
                continue
            if os.path.isfile(os.path.join(parent, top, "__init__.py")):
                return [parent]
            if "." in name and not _touches_search_path(tree):
                path = os.path.join(parent, *name.split("."))
                if os.path.isfile(path + ".py") or os.path.isfile(os.path.join(path, "__init__.py")):
                    return [parent]
    return []


def _touches_search_path(tree: ast.Module) -> bool:
    """The module reads or changes ``sys.path``: where its imports come from then depends on how
    it is run, and a namespace folder above is not taken as the one it finds."""
    return any(
        isinstance(node, ast.Attribute) and node.attr == "path" and dotted_name(node) == "sys.path"
        for node in ast.walk(tree)
    )


class Project:
    def __init__(self, root: str, parsed: ParseCache | None = None, owner: Projects | None = None):
        self.root = os.path.realpath(root)
        self._owner = owner
        self.recorder = Recorder()
        self.summaries = SummaryCache(self.recorder)
        self._listings: dict[str, dict[str, bool] | None] = {}
        self._parsed = parsed if parsed is not None else ParseCache()
        self._read: set[str] = set()
        self._modules: dict[str, Module] = {}
        self._attributes: dict[tuple, tuple[object, frozenset[str]]] = {}
        self._imports: dict[tuple, Module | None] = {}
        self._member_names: MemberNames | None = None

    def __repr__(self) -> str:
        return f"<Project {self.root}>"

    # ----- the lint of one file ------------------------------------------------------------------
    @contextmanager
    def recording(self, path: str) -> Iterator[set[str]]:
        """Around the lint of ``path``: yields the set that receives, on exit, the other files of
        the project whose contents the lint consulted (real absolute paths)."""
        consulted: set[str] = set()
        with self.recorder.frame() as frame:
            yield consulted
        consulted.update(frame.deps)
        consulted.discard(os.path.realpath(path))

    def for_script(self, tree: ast.Module, path: str) -> Project:
        """The project the module at ``path`` (parsed as ``tree``) imports from. Without a root
        marker, a script that puts a folder above its own on ``sys.path`` (``sys.path.append(<the
        folder above this file>)``) imports the packages there as Python would: the project widens
        to that folder (at most ``MAX_SCRIPT_PATH_LEVELS`` up). So does a script that imports a
        package found neither beside it nor in its root but in the folder just above its root
        (``repo/tests/test_net.py`` importing ``repo/mypkg``): the tests and scripts of a checkout
        import its own package, installed from there or run from the checkout's top (whose root
        marker a copy of the sources may lack). A root found by a marker stays."""
        if self._owner is None or any(os.path.exists(os.path.join(self.root, m)) for m in ROOT_MARKERS):
            return self
        here = os.path.dirname(os.path.realpath(path))
        above = [d for d in added_search_dirs(tree, path) if _levels_above(d, here) is not None]
        above += _checkout_above(tree, here, self.root)
        widest = min(above, key=len, default=None)  # the highest of them
        if (
            widest is None
            or self.inside(widest)
            or _levels_above(widest, here) > MAX_SCRIPT_PATH_LEVELS
            or os.path.dirname(widest) == widest
            or any(part in FOREIGN_DIRS for part in widest.split(os.sep))
        ):
            return self
        return self._owner.at_root(widest)

    # ----- files on disk -------------------------------------------------------------------------
    def inside(self, path: str) -> bool:
        return path == self.root or path.startswith(self.root + os.sep)

    def _listing(self, directory: str) -> dict[str, bool] | None:
        """Entry name -> is a directory, for a directory of the project (None outside it, unreadable,
        or holding installed code)."""
        if directory in self._listings:
            return self._listings[directory]
        entries = None
        if self.inside(directory) and os.path.basename(directory) not in FOREIGN_DIRS:
            try:
                with os.scandir(directory) as scan:
                    entries = {}
                    for entry in scan:
                        try:
                            entries[entry.name] = entry.is_dir()
                        except OSError:
                            continue
            except OSError:
                entries = None
            if entries is not None and "pyvenv.cfg" in entries:
                entries = None  # a virtual environment
        self._listings[directory] = entries
        return entries

    def _has_file(self, directory: str, name: str) -> bool:
        listing = self._listing(directory)
        return listing is not None and listing.get(name) is False

    def _has_dir(self, directory: str, name: str) -> bool:
        listing = self._listing(directory)
        return (
            listing is not None
            and listing.get(name) is True
            and name not in FOREIGN_DIRS
            and self._listing(os.path.join(directory, name)) is not None
        )

    def python_files(self) -> list[str]:
        """Every Python file of the project (within the bounds above: foreign folders, virtual
        environments and symbolic links out of the root skipped, at most ``MAX_MODULES``)."""
        found: list[str] = []
        pending = [self.root]
        while pending and len(found) < MAX_MODULES:
            directory = pending.pop()
            for name, is_dir in sorted((self._listing(directory) or {}).items()):
                path = os.path.join(directory, name)
                if is_dir and name not in FOREIGN_DIRS and not name.startswith("."):
                    if self.inside(os.path.realpath(path)):
                        pending.append(path)
                elif not is_dir and name.endswith(".py"):
                    found.append(path)
        return found[:MAX_MODULES]

    def member_names(self) -> MemberNames:
        """Which attribute names the project's classes define as methods, and which it assigns as
        attributes anywhere (read once per project as text, never parsed; see ``MemberNames``).
        Records every file read as consulted: any of them may change the answer."""
        if self._member_names is None:
            self._member_names = MemberNames.scan(self.python_files())
        self.recorder.consulted_all(self._member_names.paths)
        return self._member_names

    def context(self, path: str) -> FileContext | None:
        """The parsed module at ``path`` (a file of this project), or None when it cannot be read
        or parsed or a bound says no. Records ``path`` as consulted."""
        self.recorder.consulted(path)
        kept, ctx = self._parsed.get(path)
        if not kept:
            ctx = self._load(path)
            self._parsed.put(path, ctx)
        elif ctx is not None:
            # Facts cached on it (``ctx.shared``) may rest on what its own lookups read.
            self.recorder.consulted_all(ctx.shared(_READ_FROM_HERE, set))
        return ctx

    def _load(self, path: str) -> FileContext | None:
        if path not in self._read:
            if len(self._read) >= MAX_MODULES:
                self.recorder.truncate()
                return None
            self._read.add(path)
        real = os.path.realpath(path)
        if not self.inside(real):
            return None
        try:
            if os.path.getsize(real) > MAX_MODULE_BYTES:
                return None
            with open(real, "rb") as handle:
                data = handle.read(MAX_MODULE_BYTES + 1)
            text = decode_source(data)
            tree = ast.parse(text, filename=path)
        except (OSError, UndecodableSource, SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        return FileContext(path, text, tree, project=self)

    # ----- modules ---------------------------------------------------------------------------------
    def _search_bases(self, directory: str, added: tuple[str, ...] = ()) -> list[str]:
        """Where an absolute import of a file of ``directory`` is looked for, in order (``added``:
        the folders the file puts on ``sys.path`` itself, searched last)."""
        bases = [directory, self._package_base(directory), self.root, os.path.join(self.root, "src"), *added]
        found = []
        for base in bases:
            if base not in found and self.inside(base):
                found.append(base)
        return found

    def _package_base(self, directory: str) -> str:
        while self._has_file(directory, "__init__.py") and directory != self.root:
            directory = os.path.dirname(directory)
        return directory

    def _module_in(self, base: str, parts: list[str]) -> Module | None:
        """Module ``parts`` under the directory ``base``: a package, else a module file, else a namespace package."""
        directory = base
        for part in parts[:-1]:
            if not self._has_dir(directory, part):
                return None
            directory = os.path.join(directory, part)
        last = parts[-1]
        if self._has_dir(directory, last):
            package_dir = os.path.join(directory, last)
            if self._has_file(package_dir, "__init__.py"):
                return self._named(os.path.join(package_dir, "__init__.py"), True)
        if self._has_file(directory, last + ".py"):
            return self._named(os.path.join(directory, last + ".py"), False)
        if self._has_dir(directory, last):
            package_dir = os.path.join(directory, last)
            return Module(package_dir, self._dotted(package_dir), True, file=False)
        return None

    def _named(self, path: str, is_package: bool) -> Module:
        module = self._modules.get(path)
        if module is None:
            module = self._modules[path] = Module(path, self._dotted(path), is_package)
        return module

    def _dotted(self, path: str) -> str:
        rel = os.path.relpath(path, self.root)
        if rel.endswith("__init__.py"):
            rel = os.path.dirname(rel)
        elif rel.endswith(".py"):
            rel = rel[:-3]
        return rel.replace(os.sep, ".")

    def resolve_import(self, ctx: FileContext, level: int, module: str) -> Module | None:
        """The module ``from <level dots><module> import ...`` (or ``import <module>``) names in ``ctx``'s file."""
        # The answer depends on the file's folder only (and on directory listings, not file contents).
        # ... and on the folders the file itself puts on ``sys.path``.
        added = () if level else ctx.shared(_ADDED_SEARCH_DIRS, lambda: added_search_dirs(ctx.tree, ctx.path))
        key = (os.path.dirname(file_key(ctx)), level, module, added)
        try:
            return self._imports[key]
        except KeyError:
            found = self._imports[key] = self._resolve_import(key[0], level, module, added)
            return found

    def _resolve_import(self, directory: str, level: int, module: str, added: tuple[str, ...] = ()) -> Module | None:
        parts = module.split(".") if module else []
        if level:
            for _ in range(level - 1):
                directory = os.path.dirname(directory)
            if not self.inside(directory):
                return None
            if not parts:
                init = os.path.join(directory, "__init__.py")
                if self._has_file(directory, "__init__.py"):
                    return self._named(init, True)
                return Module(directory, self._dotted(directory), True, file=False)
            return self._module_in(directory, parts)
        if not parts:
            return None
        for base in self._search_bases(directory, added):
            found = self._module_in(base, parts)
            if found is not None:
                return found
        return None

    # ----- names -------------------------------------------------------------------------------
    def lookup(self, ctx: FileContext, expr: ast.AST) -> Definition | Module | None:
        """What the name or attribute chain ``expr`` of ``ctx``'s file names, when it is imported or
        defined at the top level of the file: a function or class ``Definition`` (in this file or
        another of the project), a ``Module``, or None (unknown, a local variable, outside the project)."""
        attributes = []
        while isinstance(expr, ast.Attribute):
            attributes.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, ast.Name):
            return None
        with self.recorder.frame() as frame:
            target = self._head(ctx, expr.id)
            for part in reversed(attributes):
                if target is None:
                    break
                target = self._attribute(target, part, 0)
        # What a file's facts were built from, for whoever reuses them later (``context``).
        ctx.shared(_READ_FROM_HERE, set).update(frame.deps)
        return target

    def star_imported_names(self, ctx: FileContext) -> dict[str, str]:
        """The absolute imports that ``from <project module> import *`` statements of ``ctx``'s file
        bring in (``utils.py`` does ``import torch``, so a file star-importing it can name
        ``torch.no_grad``): bound name -> imported dotted name, as ``ImportResolver.aliases`` spells
        it. Star imports inside those modules are followed too (``MAX_IMPORT_HOPS`` deep); a
        module's ``__all__`` limits what it exports, and one the linter cannot read exports
        nothing. Names the file binds itself are not here (its own bindings win)."""
        found: dict[str, str] = {}
        with self.recorder.frame() as frame:
            self._collect_star_imports(ctx, found, set(), 0)
        ctx.shared(_READ_FROM_HERE, set).update(frame.deps)
        own = module_names(ctx)
        return {
            name: dotted for name, dotted in found.items() if name not in own.definitions and name not in own.aliases
        }

    def _collect_star_imports(self, ctx: FileContext, found: dict[str, str], seen: set[str], hops: int) -> None:
        if hops >= MAX_IMPORT_HOPS:
            self.recorder.truncate()
            return
        for star in module_names(ctx).star_imports:
            module = self.resolve_import(ctx, star.level, star.module)
            if module is None or not module.file or module.path in seen:
                continue
            seen.add(module.path)
            source = self.context(module.path)
            if source is None:
                continue
            names = module_names(source)
            exported = _exported_names(source.tree)
            for bound, binding in names.imports.items():
                if binding.level or bound.startswith("_") or (exported is not None and bound not in exported):
                    continue
                dotted = binding.module if binding.name is None else f"{binding.module}.{binding.name}"
                found.setdefault(bound, dotted)
            self._collect_star_imports(source, found, seen, hops + 1)

    def _head(self, ctx: FileContext, name: str) -> Definition | Module | None:
        """What a bare name of ``ctx``'s file names at its top level: an import, a def/class, an alias."""
        binding = ctx.imports.bindings.get(name)
        if binding is None:
            found = definition_at(ctx, [name])
            if found is not None:
                return found
            alias = module_names(ctx).aliases.get(name)
            if alias is not None:
                return self._alias(ctx, alias, 0)
            return self._starred(ctx, name)
        if self.resolve_import(ctx, binding.level, binding.module) is None:
            return None  # an import from outside the project (torch, numpy): told from folder listings alone
        # Answers by file and name: most calls of a file go through a few imported names.
        heads = ctx.shared("project_heads", dict)
        return self._remembered(heads, name, lambda: self._binding(ctx, binding, 0))

    def _starred(self, ctx: FileContext, name: str) -> Definition | Module | None:
        """A name only a star import of ``ctx``'s file binds (``from utils.constants import *``);
        a name the file assigns anywhere is left unknown."""
        stars = module_names(ctx).star_imports
        if not stars or name.startswith("_"):
            return None
        if name in _stored_names(ctx):
            return None
        heads = ctx.shared("project_heads", dict)
        return self._remembered(heads, name, lambda: self._from_stars(ctx, stars, name))

    def _from_stars(self, ctx: FileContext, stars, name: str) -> Definition | Module | None:
        # The last star import that provides the name wins, as at run time.
        for star in reversed(stars):
            source = self.resolve_import(ctx, star.level, star.module)
            if source is None or not source.file:
                continue
            module = self.context(source.path)
            exported = _exported_names(module.tree) if module is not None else frozenset()
            if exported is not None and name not in exported:
                continue
            found = self._module_attribute(source, name, 1)
            if found is not None:
                return found
        return None

    def _remembered(self, memo: dict, key, compute) -> Definition | Module | None:
        """Lookups are remembered with the files they read (recorded again on every use), as places
        rather than parsed nodes, so that remembering never keeps a parsed module alive."""
        hit = memo.get(key)
        if hit is not None:
            place, deps = hit
            self.recorder.consulted_all(deps)
            return self._at(place)
        with self.recorder.frame() as frame:
            value = compute()
        if frame.final:
            memo[key] = (self._place(value), frozenset(frame.deps))
        return value

    @staticmethod
    def _place(value: Definition | Module | None):
        if isinstance(value, Definition):
            return (value.ctx.path, value.qualname)
        return value

    def _at(self, place) -> Definition | Module | None:
        if not isinstance(place, tuple):
            return place  # a Module, or None
        path, qualname = place
        ctx = self.context(path)
        return definition_at(ctx, qualname.split(".")) if ctx is not None else None

    def _binding(self, ctx: FileContext, binding: ImportBinding, hops: int) -> Definition | Module | None:
        if binding.name is None:
            # ``import pkg.util`` binds ``pkg``; ``import pkg.util as u`` binds ``pkg.util``.
            return self.resolve_import(ctx, binding.level, binding.module)
        module = self.resolve_import(ctx, binding.level, binding.module)
        if module is None:
            return None
        return self._attribute(module, binding.name, hops)

    def _attribute(self, target: Definition | Module, name: str, hops: int) -> Definition | Module | None:
        if isinstance(target, Definition):
            if not target.is_class:
                return None
            member = class_member(target.node, name)  # type: ignore[arg-type]
            return target.member(member) if member is not None else None
        # The hop count is part of the key: an answer cut short at one depth is not one at another.
        return self._remembered(
            self._attributes, (target.path, name, hops), lambda: self._module_attribute(target, name, hops)
        )

    def _module_attribute(self, module: Module, name: str, hops: int) -> Definition | Module | None:
        if hops >= MAX_IMPORT_HOPS:
            self.recorder.truncate()
            return None
        if module.file:
            ctx = self.context(module.path)
            if ctx is not None:
                names = module_names(ctx)
                node = names.definitions.get(name)
                if node is not None:
                    return Definition(ctx, node, name)
                binding = names.imports.get(name)
                if binding is not None:
                    return self._binding(ctx, binding, hops + 1)
                alias = names.aliases.get(name)
                if alias is not None:
                    return self._alias(ctx, alias, hops + 1)
                for star in names.star_imports:
                    if name.startswith("_"):
                        break
                    source = self.resolve_import(ctx, star.level, star.module)
                    if source is not None and source != module:
                        found = self._module_attribute(source, name, hops + 1)
                        if found is not None:
                            return found
        if module.is_package:
            # ``from pkg import util`` and ``pkg.util`` reach a submodule the package does not import.
            return self._module_in(module.directory, [name])
        return None

    def _alias(self, ctx: FileContext, expr: ast.expr, hops: int) -> Definition | Module | None:
        """``Net = ResNet`` or ``f = util.f`` at the top level of a module."""
        if hops >= MAX_IMPORT_HOPS:
            self.recorder.truncate()
            return None
        name = dotted_name(expr)
        if name is None:
            return None
        head, *rest = name.split(".")
        names = module_names(ctx)
        if head in names.definitions:
            target: Definition | Module | None = Definition(ctx, names.definitions[head], head)
        elif head in names.imports:
            target = self._binding(ctx, names.imports[head], hops + 1)
        elif head in names.aliases:
            target = self._alias(ctx, names.aliases[head], hops + 1)
        else:
            return None
        for part in rest:
            if target is None:
                return None
            target = self._attribute(target, part, hops + 1)
        return target


# `def name(self, ...)` inside a class (indented); `x.name = ...`, `name = ...` in a block (a class
# attribute, a local variable or a keyword argument on its own line: taken as attributes, the
# cautious side), `setattr(x, "name", ...)`.
_METHOD_DEF = re.compile(rb"^[ \t]+(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\([ \t]*self\b", re.M)
_ATTRIBUTE_STORES = (
    re.compile(rb"\.(\w+)[ \t]*(?::[^=\n]*)?[-+*/|&@%^]?=(?!=)"),
    re.compile(rb"^[ \t]+(\w+)[ \t]*(?::[^=\n]*)?=(?!=)", re.M),
    re.compile(rb"setattr\([^,()]+,[ \t]*['\"](\w+)['\"]"),
)


@dataclass(frozen=True)
class MemberNames:
    """The member names of a project's classes, from their text: ``methods`` defined with ``def
    name(self, ...)``, ``attributes`` assigned (``self.name = ...``). A name in ``methods`` and
    never in ``attributes`` is always a method, whatever object it is read from."""

    methods: frozenset[str]
    attributes: frozenset[str]
    paths: tuple[str, ...]

    @classmethod
    def scan(cls, paths: list[str]) -> MemberNames:
        texts, read = [], []
        for path in paths:
            try:
                if os.path.getsize(path) > MAX_MODULE_BYTES:
                    continue
                with open(path, "rb") as handle:
                    texts.append(handle.read(MAX_MODULE_BYTES + 1))
            except OSError:
                continue
            read.append(os.path.realpath(path))
        return cls.of_texts(texts, tuple(read))

    @classmethod
    def of_texts(cls, texts: list[bytes], paths: tuple[str, ...] = ()) -> MemberNames:
        methods: set[bytes] = set()
        attributes: set[bytes] = set()
        for data in texts:
            methods.update(_METHOD_DEF.findall(data))
            for pattern in _ATTRIBUTE_STORES:
                attributes.update(pattern.findall(data))
        return cls(_decoded(methods), _decoded(attributes), paths)

    def only_method(self, name: str) -> bool:
        return name in self.methods and name not in self.attributes


def _decoded(names: set[bytes]) -> frozenset[str]:
    return frozenset(n.decode("ascii", "replace") for n in names)


def member_names(ctx: FileContext) -> MemberNames:
    """The member names of the classes of ``ctx``'s project (of ``ctx`` alone without one)."""
    if ctx.project is not None:
        return ctx.project.member_names()
    return ctx.shared("member-names", lambda: MemberNames.of_texts([ctx.source.encode("utf-8", "replace")]))


def _exported_names(tree: ast.Module) -> frozenset[str] | None:
    """The names a module's top-level ``__all__`` lists (an empty set when it is built some other
    way: then what it exports cannot be told); None without an ``__all__``."""
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets):
            value = stmt.value
            if isinstance(value, (ast.List, ast.Tuple)) and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
            ):
                return frozenset(e.value for e in value.elts)
            return frozenset()
    return None


def _stored_names(ctx: FileContext) -> frozenset[str]:
    """Every name the file assigns somewhere, found once per file (a star-imported name is asked
    for at each of its uses)."""
    return ctx.shared(
        "stored_names", lambda: frozenset(n.id for n in ctx.nodes(ast.Name) if isinstance(n.ctx, ast.Store))
    )
