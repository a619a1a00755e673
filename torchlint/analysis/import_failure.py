"""A module that cannot be imported: ``never_imported(ctx, node)``.

A stale script that imports a name its project no longer has (``from train.common import
create_model`` after ``create_model`` moved elsewhere) stops with ``ImportError`` at that line:
nothing after it runs, and none of its functions is ever called. A finding about running code in
such a file describes code that never executes with the project as shipped; the engine drops it
(``engine.lint``), as it drops findings in dead functions (``analysis.liveness``). Syntax errors
(``TL000``) are still reported. torchlint is not an import checker: the failing import itself is not
reported.

The first statement of the module's top level (not inside ``try``, ``if`` -- ``TYPE_CHECKING``
included -- or a function) that is one of these fails, as Python would run it:

* ``from M import N`` where ``M`` resolves (``Project.resolve_import``) to a module file of the
  project that binds ``N`` nowhere at its top level (``definitions.top_level_bound_names``:
  ``def``/``class``, assignments of any shape, imports, ``for``/``with``/``except`` targets,
  ``global`` statements; a binding under a condition counts) and, for a package, has no
  submodule ``N`` (``N.py`` or ``N/`` beside its ``__init__.py``);
* ``import P.Q`` / ``from P.Q import N`` where ``P`` resolves to a regular package of the project
  (a folder with ``__init__.py``) that neither binds ``Q`` nor holds ``Q.py`` or ``Q/``; for a
  relative import ``P`` may be the package its dots name (``from ..utils.data import X`` where
  ``..`` holds no ``utils``).

Conservative on purpose; no conclusion (the file is taken as importable) when

* ``M`` (or ``P``) cannot be read, has ``from X import *``, a module-level ``__getattr__``, or
  touches its own namespace some other way (``globals()``, ``vars()``, ``locals()``, ``exec``,
  ``sys.modules``, ``__path__``); a namespace package (a folder without ``__init__.py``: its
  modules may lie in other folders, and a missing module is never concluded from absence alone);
* the file changes ``sys.path`` (``sys.path.append``/``insert``, anywhere): what it imports then
  depends on how it is run;
* the module's top-level name is one of the standard library's, or could be an installed package
  of the same name: an absolute import counts as the project's own module only when it is found
  beside the file (a script's folder is first on ``sys.path``) or the file imports a dotted
  submodule of a project package found in the same folder (``from P.data import ...`` or
  ``from Q.data import ...`` next to the failing ``from P.model import ...``, with ``P`` and ``Q``
  side by side: an installed package would not have the project's layout, so that folder is on
  ``sys.path``, ahead of site-packages);
* a statement before the import runs code of the file itself (a call of a function, class or
  name the file defines): the code before the import still runs, and so would what it calls.

Findings at the top level before the failing import are kept (that code runs); the ones after it,
and the ones inside any function or method of the file (never called: nothing before the import
called one), are dropped. The module read, and the package folders whose listing decided, are
recorded as dependencies of the file's result (``Project.context``, ``Recorder.consulted``).
Nothing here knows about PyTorch.
"""

from __future__ import annotations

import ast
import os
import sys
from typing import TYPE_CHECKING, NamedTuple

from torchlint.analysis.definitions import FUNCTION_NODES, module_names, top_level_bound_names

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext
    from torchlint.analysis.project import Module, Project

_STDLIB = frozenset(sys.stdlib_module_names)
# Builtins that read or write a module's namespace, or run code that could bind anything in it.
_NAMESPACE_BUILTINS = frozenset({"globals", "exec", "__import__"})


class FailedImport(NamedTuple):
    statement: ast.stmt  # the top-level import statement that raises ImportError
    module: str  # the module named, as written (with the leading dots of a relative import)
    name: str  # the name it lacks


def failing_import(ctx: FileContext) -> FailedImport | None:
    """The top-level import of ``ctx``'s file that cannot succeed (see the module docstring), or None."""
    return ctx.shared("import-failure", lambda: _first_failure(ctx))


def never_imported(ctx: FileContext, node: ast.AST) -> bool:
    """Whether ``node`` lies in code that never runs because the file's import fails before it."""
    failure = failing_import(ctx)
    if failure is None:
        return False
    line = getattr(node, "lineno", None)
    if line is None:
        return False
    if line > (failure.statement.end_lineno or failure.statement.lineno):
        return True
    # Defined before the failing import, never called before it (``_first_failure`` checks).
    return any(isinstance(a, FUNCTION_NODES) and line > a.lineno for a in ctx.ancestors(node))


def _first_failure(ctx: FileContext) -> FailedImport | None:
    project = ctx.project
    if project is None or ctx.path.endswith(".ipynb") or _changes_search_path(ctx):
        return None
    own = _own_callables(ctx)
    for statement in ctx.tree.body:
        if isinstance(statement, ast.ImportFrom):
            failure = _from_import_failure(ctx, project, statement)
        elif isinstance(statement, ast.Import):
            failure = _import_failure(ctx, project, statement)
        else:
            if _runs_own_code(statement, own):
                return None  # the file's own code runs before any later import
            continue
        if failure is not None:
            return failure
    return None


def _from_import_failure(ctx: FileContext, project: Project, statement: ast.ImportFrom) -> FailedImport | None:
    level, module = statement.level, statement.module or ""
    written = "." * level + module
    target = project.resolve_import(ctx, level, module)
    if target is None:
        missing = _missing_submodule(ctx, project, level, module) if module else None
        return FailedImport(statement, written, missing) if missing is not None else None
    if not _means_project(ctx, project, level, module, target):
        return None
    for alias in statement.names:
        if alias.name != "*" and _lacks(project, target, alias.name):
            return FailedImport(statement, written, alias.name)
    return None


def _import_failure(ctx: FileContext, project: Project, statement: ast.Import) -> FailedImport | None:
    for alias in statement.names:
        if "." not in alias.name or project.resolve_import(ctx, 0, alias.name) is not None:
            continue
        missing = _missing_submodule(ctx, project, 0, alias.name)
        if missing is not None:
            return FailedImport(statement, alias.name, missing)
    return None


def _missing_submodule(ctx: FileContext, project: Project, level: int, module: str) -> str | None:
    """For a dotted module that does not resolve: the part a regular package of the project lacks
    (``Q`` of ``P.Q`` when ``P/__init__.py`` is there but not ``P/Q.py``, ``P/Q/`` nor a binding of ``Q``)."""
    parts = module.split(".")
    # A relative import also names its package itself (`from ..utils.data import X`: `..` must hold `utils`).
    for cut in range(len(parts) - 1, -1 if level else 0, -1):
        package = project.resolve_import(ctx, level, ".".join(parts[:cut]))
        if package is None:
            continue
        prefix = ".".join(parts[:cut])
        if not package.is_package or not _means_project(ctx, project, level, prefix, package):
            return None
        return parts[cut] if _lacks(project, package, parts[cut]) else None
    return None


def _lacks(project: Project, module: Module, name: str) -> bool:
    """Whether the module file ``module`` certainly binds no ``name`` (nor has a submodule ``name``)."""
    if not module.file:
        return False  # a namespace package: its parts may lie anywhere
    source = project.context(module.path)
    if source is None or _opens_its_namespace(source):
        return False
    if name in top_level_bound_names(source):
        return False
    if module.is_package:
        directory = module.directory
        project.recorder.consulted(directory)  # a submodule added there changes the answer
        try:
            entries = os.listdir(directory)
        except OSError:
            return False
        if name + ".py" in entries or name in entries:
            return False
    return True


def _opens_its_namespace(ctx: FileContext) -> bool:
    """A module whose names cannot all be seen in its text: star imports, ``__getattr__``, ``globals()``,
    ``exec``, ``sys.modules``, ``__path__``; ``vars()``/``locals()`` at its top level."""

    def build() -> bool:
        if module_names(ctx).star_imports or "__getattr__" in top_level_bound_names(ctx):
            return True
        for node in ctx.nodes(ast.Name):
            if node.id in _NAMESPACE_BUILTINS or node.id == "__path__":
                return True
            if node.id in ("vars", "locals") and ctx.enclosing_function(node) is None:
                return True
        return any(
            node.attr == "__path__" or (node.attr == "modules" and ctx.qualname(node) == "sys.modules")
            for node in ctx.nodes(ast.Attribute)
        )

    return ctx.shared("import-failure-open-namespace", build)


def _means_project(ctx: FileContext, project: Project, level: int, module: str, target: Module) -> bool:
    """Whether Python would import the project's ``target`` for ``module`` rather than an installed
    module of the same name (see the module docstring)."""
    if level:
        return True
    top = module.split(".", 1)[0]
    if top in _STDLIB:
        return False
    here = os.path.dirname(os.path.realpath(ctx.path))
    beside = os.path.join(here, *module.split("."))
    if target.path in (beside + ".py", os.path.join(beside, "__init__.py")):
        return True  # the script's own folder comes first on sys.path
    # A dotted submodule of a project package found in the same folder as ``target`` puts that folder
    # on sys.path (an installed package would not have the project's layout); it comes before
    # site-packages there (the script's folder, the working folder or PYTHONPATH), so ``module`` is found in it.
    root = _search_root(target, module)
    for node in ctx.nodes(ast.Import, ast.ImportFrom):
        if isinstance(node, ast.ImportFrom):
            if node.level or not node.module:
                continue
            dotted = [node.module] + [f"{node.module}.{a.name}" for a in node.names if a.name != "*"]
        else:
            dotted = [a.name for a in node.names]
        for name in dotted:
            if "." not in name or name.split(".", 1)[0] in _STDLIB:
                continue
            found = project.resolve_import(ctx, 0, name)
            if found is not None and found.file and _search_root(found, name) == root:
                return True
    return False


def _search_root(module: Module, name: str) -> str:
    """The folder that must be on sys.path for ``import name`` to find ``module``."""
    folder = module.directory if module.is_package else os.path.dirname(module.path)
    for _ in name.split(".")[1 if not module.is_package else 0 :]:
        folder = os.path.dirname(folder)
    return os.path.realpath(folder)


def _changes_search_path(ctx: FileContext) -> bool:
    """The file changes ``sys.path`` somewhere (or imports ``path`` from ``sys``)."""
    for node in ctx.nodes(ast.Attribute):
        if node.attr == "path" and ctx.qualname(node) == "sys.path":
            return True
    return any(
        isinstance(node, ast.ImportFrom) and node.module == "sys" and any(a.name == "path" for a in node.names)
        for node in ctx.nodes(ast.ImportFrom)
    ) or any(node.id == "exec" for node in ctx.nodes(ast.Name))


def _own_callables(ctx: FileContext) -> frozenset[str]:
    """Names whose call runs code of the file itself: its top-level functions and classes, names
    bound to them or to anything named (``run = main``), and lambdas."""
    names = module_names(ctx)
    lambdas = {
        target.id
        for node in ctx.nodes(ast.Assign)
        if isinstance(node.value, ast.Lambda)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    return frozenset(names.definitions) | frozenset(names.aliases) | lambdas


def _runs_own_code(statement: ast.stmt, own: frozenset[str]) -> bool:
    """Whether a top-level statement calls something the file defines (outside def/class bodies)."""
    pending: list[ast.AST] = [statement]
    while pending:
        node = pending.pop()
        if isinstance(node, (*FUNCTION_NODES, ast.Lambda)):
            pending.extend(getattr(node, "decorator_list", ()))
            continue
        if isinstance(node, ast.ClassDef):
            pending.extend(node.decorator_list)
            pending.extend(node.bases)
            pending.extend(s for s in node.body if not isinstance(s, (*FUNCTION_NODES, ast.ClassDef)))
            continue
        if isinstance(node, ast.Call):
            head = node.func
            while isinstance(head, (ast.Attribute, ast.Call, ast.Subscript)):
                head = head.func if isinstance(head, ast.Call) else head.value
            if not isinstance(head, ast.Name) or head.id in own:
                return True
        pending.extend(ast.iter_child_nodes(node))
    return False
