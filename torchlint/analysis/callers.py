"""Who calls a function from the other files of its project: the reverse of ``analysis.project``.

``callers_elsewhere(definition)`` -> the call sites of a top-level function, or the constructions
of a top-level class (``Solver(fn)``), in the project's other files, as (parsed file, call) pairs, or
None when they cannot all be told. Generic Python: what a
call site means is for the caller's models to judge, in the caller's own file.

How it is found (lazily, once per project and run)
    The project's source files are listed once (``ProjectSources``: every ``.py`` and ``.ipynb``
    under the root, outside installed code, virtual environments and hidden folders) and their bytes kept. A query
    scans those bytes for the function's name as a whole word; only the files that mention it are
    parsed (``Project.context``, shared with forward lookups), and each mention there is judged:

    * a call whose callee resolves (``resolve_call``; ``resolve_name`` for a class) to the
      definition: a call site;
    * a call or name that resolves to another definition, an attribute of something else
      (``x.evaluate``), a keyword or attribute spelled the same, an import statement (the calls
      through it are judged where they are), a bare name read in a file where no import may bind
      it (the file's own variable ``train, val = splits(...)``): not a use;
    * anything else -- the name read as a value (a callback), spelled in a string
      (``getattr(m, "evaluate")``), a call the resolver cannot follow, a mention in a notebook or
      in a file that cannot be parsed -- makes the answer unknown (None).

Bounds (silent when hit: the answer is None)
    ``analysis.project.MAX_MODULES`` files listed, ``MAX_SOURCE_BYTES`` read in all,
    ``MAX_CANDIDATES`` files parsed for one query; a file over ``MAX_MODULE_BYTES`` is unknown.

Dependencies
    The answer rests on every listed file and on the listings of their directories (a file added
    later may call the function): a query records each file read and each directory listed as
    consulted, so the result cache sees an edit anywhere in the project, and a new file, as a change.
"""

from __future__ import annotations

import ast
import os
import re
import weakref
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import call_graph, resolve_call, resolve_name
from torchlint.analysis.definitions import Definition, file_key
from torchlint.analysis.project import FOREIGN_DIRS, MAX_MODULE_BYTES, MAX_MODULES

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext
    from torchlint.analysis.project import Project

# All the project's source read for reverse lookups, for one project in one process.
MAX_SOURCE_BYTES = 64_000_000
# Files that mention one name and are parsed to judge each mention.
MAX_CANDIDATES = 64
_SOURCE_SUFFIXES = (".py", ".ipynb")


class ProjectSources:
    """The source files of one project, listed and read once: ``files`` maps real path -> bytes,
    ``directories`` are the folders listed; ``complete`` is False when a bound cut the listing short."""

    def __init__(self, project: Project):
        self.files: dict[str, bytes] = {}
        self.directories: list[str] = []
        self.complete = True
        total = 0
        for directory, subdirs, names in os.walk(project.root):
            if "pyvenv.cfg" in names:
                subdirs[:] = []
                continue  # a virtual environment
            subdirs[:] = sorted(d for d in subdirs if d not in FOREIGN_DIRS and not d.startswith("."))
            self.directories.append(directory)
            for name in sorted(names):
                if name.startswith(".") or not name.endswith(_SOURCE_SUFFIXES):
                    continue
                path = os.path.join(directory, name)
                if len(self.files) >= MAX_MODULES:
                    self.complete = False
                    return
                try:
                    # Not a link, nor a FIFO or device (opening one may block forever), nor too big.
                    if os.path.islink(path) or not os.path.isfile(path) or os.path.getsize(path) > MAX_MODULE_BYTES:
                        self.complete = False
                        continue
                    with open(path, "rb") as handle:
                        data = handle.read(MAX_MODULE_BYTES + 1)
                except OSError:
                    self.complete = False
                    continue
                total += len(data)
                if total > MAX_SOURCE_BYTES:
                    self.complete = False
                    return
                self.files[path] = data

    def mentioning(self, name: str) -> list[str]:
        word = re.compile(rb"(?<![\w])" + re.escape(name.encode()) + rb"(?![\w])")
        return [path for path, data in self.files.items() if name.encode() in data and word.search(data)]


_SOURCES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def project_sources(project: Project) -> ProjectSources:
    sources = _SOURCES.get(project)
    if sources is None:
        sources = _SOURCES[project] = ProjectSources(project)
    return sources


def callers_elsewhere(definition: Definition) -> list[tuple[FileContext, ast.Call]] | None:
    """The call sites of the top-level function or class ``definition`` in the other files of its
    project, in file and source order; None when they cannot all be told (see the module docstring)."""
    project = definition.ctx.project
    if project is None or "." in definition.qualname:
        return None
    sources = project_sources(project)
    recorder = project.recorder
    recorder.consulted_all(sources.directories)
    recorder.consulted_all(sources.files)
    if not sources.complete:
        recorder.truncate()
        return None
    home = file_key(definition.ctx)
    candidates = [path for path in sources.mentioning(definition.name) if path != home]
    if len(candidates) > MAX_CANDIDATES:
        recorder.truncate()
        return None
    found: list[tuple[FileContext, ast.Call]] = []
    for path in candidates:
        if path.endswith(".ipynb"):
            return None
        ctx = project.context(path)
        if ctx is None:
            return None
        sites = _call_sites(ctx, definition)
        if sites is None:
            return None
        found.extend((ctx, call) for call in sites)
    return found


def _call_sites(ctx: FileContext, definition: Definition) -> list[ast.Call] | None:
    """The calls of ``definition`` in ``ctx``'s file; None when a mention of its name is a use the
    resolver cannot account for."""
    name = definition.name
    for alias in ctx.nodes(ast.alias):
        if alias.name.rpartition(".")[2] == name and alias.asname not in (None, name):
            return None  # ``from m import name as other``: its calls are spelled ``other(...)``
    callees = {id(call.func): call for call in ctx.calls}
    sites = []
    for node in ctx.nodes(ast.Name, ast.Attribute, ast.Constant):
        if isinstance(node, ast.Constant):
            if node.value == name:
                return None  # ``getattr(module, "name")``, a registry keyed by name
            continue
        if (node.id if isinstance(node, ast.Name) else node.attr) != name:
            continue
        call = callees.get(id(node))
        if call is None:
            if isinstance(node, ast.Attribute) and not _may_name(ctx, node):
                continue  # ``obj.name``: an attribute of some object, not the function
            if isinstance(node, ast.Name) and not _may_import(ctx, name):
                continue  # ``train, val = splits(...)``: a name of this file that no import binds
            return None  # read as a value, or assigned: the function may be handed on
        target = resolve_call(ctx, call) if definition.is_function else resolve_name(ctx, call.func)
        if target is None:
            if isinstance(node, ast.Attribute) and not _may_name(ctx, node):
                continue  # ``self.trainer.evaluate()``: a method of some object
            return None
        if target.node is definition.node or (
            file_key(target.ctx) == file_key(definition.ctx) and target.qualname == definition.qualname
        ):
            sites.append(call)
    return sites


def _may_import(ctx: FileContext, name: str) -> bool:
    """Whether a bare ``name`` in ``ctx``'s file may be bound by an import: an import binds it, or a
    ``from m import *`` may. Otherwise a mention is of the file's own variable, parameter or
    definition: another file's function reaches it only through an import (a function handed in
    is read as a value where it is imported)."""
    if name in ctx.imports.bindings:
        return True
    return any(alias.name == "*" for alias in ctx.nodes(ast.alias))


def _may_name(ctx: FileContext, node: ast.Attribute) -> bool:
    """Whether ``a.b.name`` may name a module's function: its head is an imported module of the file."""
    head = node.value
    while isinstance(head, ast.Attribute):
        head = head.value
    return isinstance(head, ast.Name) and head.id in ctx.imports.bindings


def local_call_sites(ctx: FileContext, func) -> list[ast.Call] | None:
    """The calls of the top-level function ``func`` in its own file, dead ones included; None when
    the file names it some other way (read as a value, a string ``getattr(module, "name")``)."""
    name = func.name
    graph = call_graph(ctx)
    local = set(map(id, graph.callers(func)))
    for node in ctx.nodes(ast.Name, ast.Constant):
        if isinstance(node, ast.Constant):
            if node.value == name and not _is_dict_key(ctx, node):
                return None  # `getattr(module, "name")`, `__all__`, a registry keyed by name
        elif node.id == name and not isinstance(node.ctx, ast.Store):
            call = ctx.parent(node)
            if not (isinstance(call, ast.Call) and call.func is node and id(call) in local):
                return None  # read as a value (a callback), or a call the file cannot resolve
    return [*graph.callers(func), *graph.dead_callers(func)]


def _is_dict_key(ctx: FileContext, node: ast.Constant) -> bool:
    """Whether the string ``node`` is a key of a dict display (``{"sitw_test": eer}``, a label for
    a logged number): a key names nothing by itself; a registry maps it to the function, which is
    then read as a value, and a lookup by a computed key goes through ``globals()`` or ``getattr``."""
    parent = ctx.parent(node)
    return isinstance(parent, ast.Dict) and any(key is node for key in parent.keys)


def project_call_sites(ctx: FileContext, func) -> list[tuple[FileContext, ast.Call]] | None:
    """Every call of the top-level function ``func`` in its project, this file's first, each with
    its file; None when one may be missed: a file without a project, a method or nested function,
    a mention of the name that is not a call resolved to it (``local_call_sites``,
    ``callers_elsewhere``)."""
    if ctx.project is None or ctx.parent(func) is not ctx.tree:
        return None
    local = local_call_sites(ctx, func)
    elsewhere = callers_elsewhere(Definition(ctx, func)) if local is not None else None
    if elsewhere is None:
        return None
    return [*((ctx, call) for call in local), *elsewhere]
