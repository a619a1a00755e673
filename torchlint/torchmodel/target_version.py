"""The PyTorch a project is written for, when it is an old one.

Some defaults changed between releases: ``F.dropout``'s ``training`` defaulted to False before
1.0 and to True since. A rule about a default must judge code by the release it runs on, and code
says which release that is in two ways, both read without running anything:

* a pin in a requirements or packaging file at the project root (``requirements*.txt``,
  ``environment*.yml``, ``setup.py``, ``setup.cfg``, ``pyproject.toml``): ``torch==0.3.1``,
  ``torch<1.0``, ``pytorch=0.4.1`` (conda). The lowest upper bound of those pins counts, for
  every file of the project; a pin without one (``torch>=0.4``) says nothing.
* code that cannot run on a newer release: ``loss.data[0]`` where ``loss`` is a scalar --
  ``backward()`` is called on it with no argument in the same function, or it is a full reduction
  (``x.sum().data[0]``). Since 0.4 a scalar is a 0-dimensional tensor and indexing it raises
  (0.4 warned, 1.0 raises), so that file runs only before 1.0, and so do the modules it imports,
  directly or through others (``train.py`` imports ``models``, which imports ``models.attention``):
  they run with it. Other files of the project (an example written later, a sibling script) are
  not judged by it.

``written_before(ctx, release)`` is True when either proves every release ``ctx``'s file runs on
older than ``release``. Found once per project and run; the files read are recorded as the lint's
dependencies, so the cache sees a pin or a file change.
"""

from __future__ import annotations

import ast
import os
import re
import weakref
from typing import TYPE_CHECKING

from torchlint.analysis.callers import project_sources
from torchlint.analysis.definitions import file_key
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.torch_versions import padded, parse_version, takes_volatile_input

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext
    from torchlint.analysis.project import Project

# Files at a project's root that may pin its PyTorch.
_PIN_FILES = re.compile(r"(requirements.*\.txt|environment.*\.ya?ml|setup\.py|setup\.cfg|pyproject\.toml)$")
# `torch==0.3.1`, `torch <1.0`, `pytorch=0.4.1` (conda), `"torch<=0.4.1"`: the name, then an
# operator that bounds it from above, then the version. `torchvision`/`pytorch-lightning` do not match.
_PIN = re.compile(r"(?<![\w.-])(?:py)?torch\s*(==|=|<=|<)\s*(\d+(?:\.\d+)*)(?![\w.])")
# The release a scalar `.data[0]` stops running on (0.4 made scalars 0-dimensional, 1.0 raises).
_SCALAR_INDEX_RAISES_BEFORE = (1, 0)
# Methods that reduce a whole tensor to a scalar when called with no argument.
_FULL_REDUCTIONS = frozenset({"sum", "mean", "norm", "prod", "max", "min"})

# How many imports deep the modules a file with old code runs are followed.
_IMPORT_HOPS = 4

_FOUND: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def written_before(ctx: FileContext, release: tuple[int, ...]) -> bool:
    """Whether ``ctx``'s file runs only on a PyTorch older than ``release`` (module docstring)."""
    project = ctx.project
    if project is None:
        return _shows_old_code(ctx) and _below(_SCALAR_INDEX_RAISES_BEFORE, release)
    found = _FOUND.get(project)
    if found is None:
        found = _FOUND[project] = _project_evidence(project)
    pinned, old_code_files, deps = found
    project.recorder.consulted_all(deps)
    if pinned is not None and _below(pinned, release):
        return True
    return file_key(ctx) in old_code_files and _below(_SCALAR_INDEX_RAISES_BEFORE, release)


def _project_evidence(project: Project) -> tuple[tuple[int, ...] | None, frozenset[str], tuple[str, ...]]:
    """The lowest upper bound the root's pins put on PyTorch (exclusive; None without one), the files
    that run with code no release since 1.0 runs, and the paths read to find both."""
    deps = [project.root]
    bounds = []
    try:
        names = sorted(os.listdir(project.root))
    except OSError:
        names = []
    for name in names:
        path = os.path.join(project.root, name)
        if _PIN_FILES.match(name) and os.path.isfile(path):
            deps.append(path)
            bounds.extend(_pinned_bounds(path))
    sources = project_sources(project)
    deps += sources.directories
    candidates = [path for path, data in sources.files.items() if b".data[0]" in data and path.endswith(".py")]
    deps += candidates
    old = [ctx for ctx in map(project.context, candidates) if ctx is not None and _shows_old_code(ctx)]
    imported, read = _imported_closure(project, old)
    deps += read
    pinned = min(bounds) if bounds else None  # ("1.0" and "1.0.0" compare unequal, but bound alike)
    return pinned, frozenset(imported), tuple(deps)


def _imported_closure(project: Project, start: list[FileContext]) -> tuple[set[str], list[str]]:
    """The files of ``start`` and the project modules they import, directly or through others (at
    most ``_IMPORT_HOPS`` deep), and the files parsed on the way."""
    found = {file_key(ctx) for ctx in start}
    read: list[str] = []
    frontier = list(start)
    for _ in range(_IMPORT_HOPS):
        following = []
        for ctx in frontier:
            for path in _imported_files(project, ctx):
                if path in found:
                    continue
                found.add(path)
                read.append(path)
                imported = project.context(path)
                if imported is not None:
                    following.append(imported)
        frontier = following
    return found, read


def _imported_files(project: Project, ctx: FileContext) -> list[str]:
    """The project files ``ctx`` imports: ``import a.b``, ``from a import b`` (module ``a`` and,
    when it is a package, its submodule ``b``), relative imports."""
    paths = []
    for node in ctx.nodes(ast.Import, ast.ImportFrom):
        if isinstance(node, ast.Import):
            wanted = [(0, alias.name) for alias in node.names]
        else:
            base = node.module or ""
            wanted = [(node.level, base)] + [
                (node.level, f"{base}.{alias.name}" if base else alias.name)
                for alias in node.names
                if alias.name != "*"
            ]
        for level, module in wanted:
            found = project.resolve_import(ctx, level, module) if (module or level) else None
            if found is not None and found.file:
                paths.append(os.path.realpath(found.path))
    return paths


def _pinned_bounds(path: str) -> list[tuple[int, ...]]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read(200_000)
    except OSError:
        return []
    bounds = []
    for line in text.splitlines():
        code = line.split("#", 1)[0]
        for operator, version in _PIN.findall(code):
            parts = parse_version(version)
            if parts is not None:
                # `==0.4.1`/`<=0.4.1` allow 0.4.1 itself: the bound is just above it.
                bounds.append(parts if operator == "<" else (*parts, 1))
    return bounds


def _shows_old_code(ctx: FileContext) -> bool:
    return ".data[0]" in ctx.source and any(_indexes_scalar(ctx, node) for node in ctx.nodes(ast.Subscript))


def _indexes_scalar(ctx: FileContext, node: ast.Subscript) -> bool:
    """``X.data[0]`` where ``X`` is a scalar: a full reduction called with no argument, or a name
    that the same function backpropagates with ``X.backward()`` (no gradient argument: only a
    scalar may be)."""
    target = node.value
    if not (isinstance(node.slice, ast.Constant) and node.slice.value == 0 and isinstance(target, ast.Attribute)):
        return False
    if target.attr != "data":
        return False
    owner = target.value
    if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Attribute):
        return owner.func.attr in _FULL_REDUCTIONS and not owner.args and not owner.keywords
    if not isinstance(owner, ast.Name):
        return False
    scope = ctx.enclosing_function(node) or ctx.tree
    return any(
        isinstance(call.func, ast.Attribute)
        and call.func.attr == "backward"
        and not call.args
        and not call.keywords
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == owner.id
        for call in ast.walk(scope)
        if isinstance(call, ast.Call)
    )


def _below(bound: tuple[int, ...], release: tuple[int, ...]) -> bool:
    """Every version under the exclusive ``bound`` is older than ``release``."""
    return padded(bound, release) <= padded(release, bound)


def volatile_in_old_code(ctx: FileContext, call: ast.Call) -> bool:
    """Whether ``call`` takes a volatile input in a file written for a PyTorch before 1.0: such a file
    runs either on a release before 0.4, where the volatile input keeps the call from recording a
    graph, or on one where its own old code raises first (``loss.data[0]``)."""
    return takes_volatile_input(ctx, call) and written_before(ctx, torch_names.VOLATILE_HONOURED_BY_CODE_BEFORE)
