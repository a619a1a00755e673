"""Functions that no live code of their project ever runs: ``in_dead_function(ctx, node)``.

A finding inside such a function describes code that never executes with the project as shipped;
the engine drops it (``engine.lint``). A function is dead here only when the project's code shows
it, never merely because this file does not call it (a public function of an importable module is
an API: a user, a notebook or a script outside the repository may call it). Dead means: nothing in
the project refers to it except from dead code, and one of

* it has call sites, all in code that never runs: after an ``exit()``/``return`` in their block
  (``FileContext.dead_calls``), under a branch the file's constants rule out
  (``conditions.never_runs``), or inside another dead function;
* a call of it is commented out (``# evaluate(model, loader)``, ``#self._evaluate()``): the author
  switched it off. Not in a ``if __name__ == "__main__":`` block: there commented calls are the
  script's menu of what to run this time (``# train()`` above ``predict(...)``), flipped by hand;
* it is private (``_helper``, not a dunder): no user outside the project is meant to call it;
* it is a top-level function of a script: a file with a ``__main__`` block or top-level calls
  that no other file of the project names (so none imports it; ``name.py``, the file's name in a
  copied header or a launcher, is no import).

Apart from all that, a ``def`` written directly in a module or class body that a later statement of
the same body binds again (a second ``def test(...)`` pasted below the first) before anything reads
the name is dead: every later read, here or through an import, finds the new binding.

A file may reach its functions by a computed name (``globals()``, ``eval``, ``getattr`` of the
module, ``fire.Fire()``); then none is judged dead. ``vars(args)`` or ``getattr(opt, key)`` read an
instance's attributes, which hold no function of the file (of a method's class, ``getattr`` does).
A string spelled like the function keeps it alive (``getattr(m, "name")``, ``__all__``) unless it is
a dict display's key (``{"sitw_test": eer}``, a label for a logged number).

"Refers to" is judged through every file of the project that spells the name (``callers``'
``ProjectSources``, indexed once per run): a call resolved to the function counts as a call site; a
call resolved elsewhere, or ``self.name`` in a class unrelated to the function's class, is not a
reference; anything else (read as a value, a callback, a string ``getattr(obj, "name")``, an
``__all__`` entry, a call the resolver cannot follow, an attribute of an unknown object) keeps the
function alive. Decorated functions (registered entry points, hooks), dunders, nested functions and
methods of classes with a base outside the project (a framework may call its hooks ``self._x()``)
are never judged dead by themselves. Nothing here knows about PyTorch.
"""

from __future__ import annotations

import ast
import os
import re
from typing import TYPE_CHECKING

from torchlint.analysis.callers import MAX_CANDIDATES, callers_elsewhere, local_call_sites, project_sources
from torchlint.analysis.callgraph import class_bases
from torchlint.analysis.conditions import never_runs
from torchlint.analysis.definitions import FUNCTION_NODES, Definition, file_key
from torchlint.analysis.mentions import mentions
from torchlint.analysis.nodes import last_name

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

# Decorators that only change how a method is bound, not who calls it.
_BINDING_DECORATORS = frozenset({"staticmethod", "classmethod"})
# How deep a chain of "called only from a dead function" is followed.
_MAX_DEPTH = 6
_ALIVE, _DEAD = False, True


def in_dead_function(ctx: FileContext, node: ast.AST) -> bool:
    """Whether ``node`` lies in a function (or inside one) that the project never runs."""
    if ctx.path.endswith(".ipynb"):
        return False  # a notebook's user calls from any cell, in any order
    if ctx.project is None:  # who calls what cannot be told; a def replaced unread is told by the file
        return any(
            isinstance(ancestor, FUNCTION_NODES) and _replaced(ctx, ancestor) for ancestor in ctx.ancestors(node)
        )
    return any(
        isinstance(ancestor, FUNCTION_NODES) and function_is_dead(ctx, ancestor) for ancestor in ctx.ancestors(node)
    )


def function_is_dead(ctx: FileContext, func: ast.AST, depth: int = 0, pending: frozenset = frozenset()) -> bool:
    """Whether the project never runs ``func`` (see the module docstring); memoised per file."""
    memo = ctx.shared("liveness", dict)
    if func in memo:
        return memo[func]
    key = (file_key(ctx), func.lineno, func.col_offset)
    if key in pending:
        return True  # a cycle of calls nobody enters from outside: the least fixed point is dead
    if depth > _MAX_DEPTH:
        return False
    dead = _judge(ctx, func, depth, pending | {key})
    if not pending:  # a verdict reached inside a cycle may rest on the cycle's assumption
        memo[func] = dead
    return dead


def _judge(ctx: FileContext, func, depth: int, pending: frozenset) -> bool:
    project = ctx.project
    name = func.name
    if project is None:
        return _ALIVE
    if _replaced(ctx, func):
        return _DEAD
    if name.startswith("__") and name.endswith("__"):
        return _ALIVE
    if any(_decorator_name(d) not in _BINDING_DECORATORS for d in func.decorator_list):
        return _ALIVE
    owner = ctx.parent(func)
    method = isinstance(owner, ast.ClassDef)
    if method:
        if not isinstance(ctx.parent(owner), ast.Module) or not _bases_in_project(Definition(ctx, owner)):
            return _ALIVE
        local: list[ast.Call] = []  # a method's calls are found with the project's other mentions
    elif isinstance(owner, ast.Module):
        local = local_call_sites(ctx, func)
        if local is None or not all(_site_is_dead(ctx, site, depth, pending) for site in local):
            return _ALIVE  # the common case, told from this file alone
    else:
        return _ALIVE  # a nested function is handed around by its enclosing one
    # Only a function shown switched off is looked up in the whole project: an API function
    # nobody calls costs no search.
    if not local and not _switched_off(ctx, name, method):
        return _ALIVE
    _consult_all(project)
    sites = _method_sites(ctx, owner, name) if method else _sites_elsewhere(ctx, func)
    if sites is None:
        return _ALIVE
    return all(_site_is_dead(site_ctx, site, depth, pending) for site_ctx, site in sites)


def _replaced(ctx: FileContext, func) -> bool:
    """Whether ``func`` is a ``def`` of a module or class body, not decorated (a decorator may have
    registered it), that a later ``def`` or assignment replaces unread (``_rebound_unread``)."""
    if any(_decorator_name(d) not in _BINDING_DECORATORS for d in func.decorator_list):
        return False
    owner = ctx.parent(func)
    if not isinstance(owner, (ast.Module, ast.ClassDef)):
        return False
    memo = ctx.shared("liveness-replaced", dict)
    if func not in memo:
        memo[func] = _rebound_unread(ctx, owner, func, isinstance(owner, ast.ClassDef))
    return memo[func]


def _rebound_unread(ctx: FileContext, owner: ast.Module | ast.ClassDef, func, method: bool) -> bool:
    """Whether ``func``, a ``def`` written directly in the body of a module or class, is replaced
    before anything can read it: a later statement of the same body binds its name again (another
    ``def`` or ``class``, an assignment, an import) and nothing from the ``def`` to that rebinding
    reads the name -- no statement in between (nor a function it may call), nor what the rebinding
    statement evaluates first (its decorators and defaults, a class body, an assigned value), and
    the file reaches no name by computation (``globals()``). Every later read, in this file or
    through an import, finds the new binding: a second ``def test(...)`` pasted below the first
    leaves the first one dead."""
    name = func.name
    body = owner.body
    index = next((i for i, stmt in enumerate(body) if stmt is func), None)
    if index is None:
        return False
    later = next((i for i in range(index + 1, len(body)) if _binds(body[i], name)), None)
    if later is None or _looks_up_names(ctx, method):
        return False
    rebinding = body[later]
    evaluated_first: list[ast.AST] = [*body[index + 1 : later]]
    if isinstance(rebinding, FUNCTION_NODES):
        arguments = rebinding.args
        evaluated_first += [*rebinding.decorator_list, *arguments.defaults, *arguments.kw_defaults]
        evaluated_first += [a.annotation for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
        evaluated_first += [arguments.vararg, arguments.kwarg, rebinding.returns]
    elif isinstance(rebinding, (ast.ClassDef, ast.Assign, ast.AnnAssign)):
        evaluated_first.append(rebinding)
    loaded: set[str] = set()
    for part in evaluated_first:
        for node in ast.walk(part) if part is not None else ():
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
                if node.id == name:
                    return False
                loaded.add(node.id)
            elif isinstance(node, ast.Constant) and node.value == name:
                return False  # `__all__ = ["test"]`, `getattr(module, "test")`
            elif isinstance(node, ast.Attribute):
                loaded.add(node.attr)
    # What runs in between may call a function defined earlier that reads the name.
    called = [f for n in loaded for f in ctx.functions.get(n, ()) if f is not func]
    ran = mentions(ctx).scopes_run_by(called)
    return not any(
        isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Store)
        for scope in ran
        for node in ast.walk(scope)
    )


def _binds(stmt: ast.stmt, name: str) -> bool:
    """Whether the statement, run, surely binds ``name`` in its own scope."""
    if isinstance(stmt, (*FUNCTION_NODES, ast.ClassDef)):
        return stmt.name == name
    if isinstance(stmt, ast.Assign):
        return any(
            isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store)
            for target in stmt.targets
            for node in ast.walk(target)
        )
    if isinstance(stmt, ast.AnnAssign):
        return stmt.value is not None and isinstance(stmt.target, ast.Name) and stmt.target.id == name
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return any((alias.asname or alias.name.partition(".")[0]) == name for alias in stmt.names)
    return False


def _switched_off(ctx: FileContext, name: str, method: bool) -> bool:
    """Whether the project shows a function it never calls is not meant to run: a call of it is
    commented out (not as a ``__main__`` choice), it is private, or it is a script's own function."""
    if _looks_up_names(ctx, method):
        return False  # `getattr(self, "_eval_" + mode)`, `globals()[name]`: reached by a computed name
    commented = _commented_calls(ctx, name, method)
    if _MENU in commented:
        return False  # `# train()` in the `__main__` block: one of the script's choices, flipped by hand
    return _OFF in commented or name.startswith("_") or (not method and is_unimported_script(ctx))


def _decorator_name(decorator: ast.AST) -> str | None:
    return decorator.id if isinstance(decorator, ast.Name) else None


def _site_is_dead(ctx: FileContext, site: ast.Call, depth: int, pending: frozenset) -> bool:
    if site in _dead_calls(ctx) or never_runs(ctx, site):
        return True
    return any(
        isinstance(ancestor, FUNCTION_NODES) and function_is_dead(ctx, ancestor, depth + 1, pending)
        for ancestor in ctx.ancestors(site)
    )


def _dead_calls(ctx: FileContext) -> frozenset:
    return ctx.shared("liveness-dead-calls", lambda: frozenset(ctx.dead_calls))


def _sites_elsewhere(ctx: FileContext, func) -> list[tuple[FileContext, ast.Call]] | None:
    """The calls of the top-level function ``func`` in the project's other files (``callers``)."""
    if is_unimported_script(ctx):
        return []  # no other file imports the script: none can call its functions
    return callers_elsewhere(Definition(ctx, func))


def _method_sites(ctx: FileContext, cls: ast.ClassDef, name: str) -> list[tuple[FileContext, ast.Call]] | None:
    """The calls ``self.name(...)`` (``cls.``, ``super().``) that may run the method ``name`` of
    ``cls``, in every file of the project: those made in ``cls``, its bases or its subclasses.
    None when the name is met any other way (``trainer.name()``, ``getattr(m, "name")``)."""
    project = ctx.project
    sources = _sources(project)
    if sources is None:
        return None
    home = Definition(ctx, cls)
    sites = []
    for path in sources.mentioning(name):
        if path.endswith(".ipynb"):
            return None
        other = ctx if path == file_key(ctx) else project.context(path)
        if other is None:
            return None
        found = _self_calls(other, name, home)
        if found is None:
            return None
        sites += [(other, call) for call in found]
    return sites


def _sources(project):
    """The project's source files (``callers.ProjectSources``); None when a bound cut the listing
    short. Not recorded as consulted here: an answer "alive" is what the lint gives without this
    module, so only a "dead" answer records its dependence on every file (``_consult_all``)."""
    sources = project_sources(project)
    return sources if sources.complete else None


def _consult_all(project) -> None:
    """Record every file and folder of the project as consulted: an edit to any of them, or a new
    file, may bring a call back to life (the result cache must see it)."""
    sources = project_sources(project)
    project.recorder.consulted_all(sources.directories)
    project.recorder.consulted_all(sources.files)


def _self_calls(ctx: FileContext, name: str, home: Definition) -> list[ast.Call] | None:
    found = []
    calls = [*ctx.calls, *ctx.dead_calls]
    callee = {id(call.func): call for call in calls}
    attributes = [node for node in ctx.nodes(ast.Attribute) if node.attr == name]
    attributes += [
        call.func for call in ctx.dead_calls if isinstance(call.func, ast.Attribute) and call.func.attr == name
    ]
    for node in ctx.nodes(ast.Name, ast.Constant):
        if (node.id if isinstance(node, ast.Name) else node.value) == name:
            return None
    for node in attributes:
        if isinstance(node.ctx, ast.Store) and _is_self(node.value):
            continue  # `self.name = ...` in some class: the attribute is assigned, not the method run
        call = callee.get(id(node))
        if call is None or not _is_self(node.value):
            return None  # `self.name` handed on as a callback, `trainer.name()` on some object
        cls = ctx.enclosing(node, ast.ClassDef)
        if cls is None:
            return None
        related = _related(Definition(ctx, cls), home)
        if related is None:
            return None
        if related:
            found.append(call)
    return found


def _is_self(expr: ast.AST) -> bool:
    if isinstance(expr, ast.Name):
        return expr.id in ("self", "cls")
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "super"


def _bases(cls: Definition) -> list:
    """``class_bases`` of ``cls`` less ``object``, which calls no method of its subclasses."""
    written = cls.node.bases
    return [
        base
        for expr, base in zip(written, class_bases(cls))
        if not (isinstance(expr, ast.Name) and expr.id == "object")
    ]


def _hierarchy(cls: Definition) -> tuple[set, bool, bool]:
    """The keys of ``cls`` and of every class it derives from in the project; whether some base lies
    outside the project (a framework class); whether some base cannot be told."""
    seen, pending, outside, unknown = set(), [cls], False, False
    while pending:
        current = pending.pop()
        if current.key in seen:
            continue
        seen.add(current.key)
        for base in _bases(current):
            if isinstance(base, Definition):
                pending.append(base)
            elif base is None:
                unknown = True
            else:
                outside = True
    return seen, outside, unknown


def _ancestors(cls: Definition) -> set | None:
    """The keys of ``cls`` and of every class it derives from in the project; None when a base
    cannot be told (then it may be any class)."""
    keys, _, unknown = _hierarchy(cls)
    return None if unknown else keys


def _bases_in_project(cls: Definition) -> bool:
    """Whether every class ``cls`` derives from is the project's own (or ``object``): no framework
    class above it may call its methods by name."""
    _, outside, unknown = _hierarchy(cls)
    return not (outside or unknown)


def _related(cls: Definition, home: Definition) -> bool | None:
    """Whether a ``self.name(...)`` in ``cls`` may run a method of ``home``: ``cls`` is ``home``,
    derives from it or is one of its bases. None when ``cls``'s bases cannot all be told."""
    above = _ancestors(cls)
    if above is None:
        return None
    home_above = _ancestors(home)
    return home.key in above or (home_above is not None and cls.key in home_above)


def _looks_up_names(ctx: FileContext, method: bool = True) -> bool:
    """Whether the file may reach its functions by a computed name: ``globals()``, ``locals()``,
    ``vars()``, ``eval``/``exec``, a command line built from the module's functions (``fire.Fire()``
    with no argument), or ``getattr``/``hasattr``/``vars`` of an object that may hold them, with a
    name not written out. Such a lookup reads the attributes of its object only: of an instance
    (``vars(args)``, ``getattr(opt, key)``), none of the file's functions; of ``self``, the methods
    too (for a method: ``getattr(self, "_eval_" + mode)``); a top-level function only through the
    module itself or something the file cannot tell (``getattr(sys.modules[__name__], name)``)."""

    def compute(method: bool) -> bool:
        reaches_modules = _reaches_modules(ctx)
        for call in ctx.calls:
            func = call.func
            if isinstance(func, ast.Name):
                if func.id in ("getattr", "hasattr", "vars") and not (
                    func.id != "vars" and len(call.args) > 1 and isinstance(call.args[1], ast.Constant)
                ):
                    if not call.args or reaches_modules or _may_hold_functions(ctx, call.args[0]):
                        return True
                    if method and func.id != "vars":
                        return True  # an instance's methods: ``getattr(trainer, "eval_" + split)``
                if func.id in ("globals", "locals", "eval", "exec"):
                    return True
            if last_name(func) == "Fire" and not call.args:
                return True
        return False

    return ctx.shared(("liveness-lookups", method), lambda: compute(method))


# Calls that give a module object (``importlib.import_module(name)``).
_MODULE_GETTERS = frozenset({"import_module", "__import__", "getmodule", "reload"})


def _reaches_modules(ctx: FileContext) -> bool:
    """Whether the file gets hold of module objects other than by importing them by name
    (``sys.modules[__name__]``, ``importlib.import_module(...)``, ``import __main__``): then any
    object it reads attributes from may be a module, its own included."""

    def compute() -> bool:
        if "__main__" in ctx.imports.bindings or any(last_name(call.func) in _MODULE_GETTERS for call in ctx.calls):
            return True
        return any(
            node.attr == "modules" and isinstance(node.value, ast.Name) and node.value.id == "sys"
            for node in ctx.nodes(ast.Attribute)
        )

    return ctx.shared("liveness-reaches-modules", compute)


def _may_hold_functions(ctx: FileContext, expr: ast.AST) -> bool:
    """Whether the attributes of ``expr`` may be the file's functions or a class's methods: it is
    anything but a plain variable holding an instance (``args``, ``opt``, ``self``) -- a name the
    file imports (a module), a class of the file, ``cls``, an expression (``type(self)``)."""
    if not isinstance(expr, ast.Name):
        return True
    name = expr.id
    return name in ctx.imports.bindings or name in ctx.classes or name in ("cls", "mcs", "klass")


_OFF, _MENU = "off", "menu"


def _commented_calls(ctx: FileContext, name: str, method: bool) -> set[str]:
    """Where comments hold a call of the function ``name`` (``# evaluate(model)``; of a method,
    ``# self.evaluate(loader)``), in its own file or in a file that imports it (any other file's
    comment is about some other function): ``_MENU`` for one in a ``__main__`` block, ``_OFF``
    for one anywhere else."""
    project = ctx.project
    callee = rb"(?:self|cls)\." if method else rb"(?<![\w.])"
    call = re.compile(rb"#[^\n]*?" + callee + re.escape(name.encode()) + rb"\s*\(")
    home = file_key(ctx)
    sources = _sources(project)
    if sources is None:
        return {_MENU}  # the comments cannot all be read: claim nothing
    found = set()
    for path in sources.mentioning(name):
        data = sources.files[path]
        matches = list(call.finditer(data))
        if not matches or path.endswith(".ipynb"):
            continue
        other = ctx if path == home else project.context(path)
        if other is None or (other is not ctx and not _imports_from(other, name, home)):
            continue
        for match in matches:
            line = data.count(b"\n", 0, match.start()) + 1
            found.add(_MENU if _in_main_block(other, line) else _OFF)
    return found


def _imports_from(ctx: FileContext, name: str, home: str) -> bool:
    """Whether ``ctx``'s file imports ``name``, or imports everything of the module at ``home``."""
    if name in ctx.imports.bindings:
        return True
    for node in ctx.nodes(ast.ImportFrom):
        if any(alias.name == "*" for alias in node.names):
            module = ctx.project.resolve_import(ctx, node.level, node.module or "")
            if module is None:  # not found from this file's folder: judge by the module's name
                if (node.module or "").rpartition(".")[2] == os.path.splitext(os.path.basename(home))[0]:
                    return True
            elif module.file and os.path.realpath(module.path) == home:
                return True
    return False


def _in_main_block(ctx: FileContext, line: int) -> bool:
    """Whether ``line`` lies in a top-level ``if __name__ == "__main__":`` block of the file (up to
    the next top-level statement, so a trailing comment of the block counts)."""
    body = ctx.tree.body
    for index, stmt in enumerate(body):
        if isinstance(stmt, ast.If) and _is_main_guard(stmt.test):
            end = body[index + 1].lineno if index + 1 < len(body) else float("inf")
            if stmt.lineno <= line < end:
                return True
    return False


def _is_main_guard(test: ast.AST) -> bool:
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


def is_unimported_script(ctx: FileContext) -> bool:
    """Whether ``ctx``'s file is a script no other file of its project imports: it has a ``__main__``
    block or calls at its top level, and no other file imports it. A file that spells the module's
    name is read: an import naming it (``from pkg.train import f``, ``from . import train``) that
    resolves to this file, or to nothing the linter can find along a package path this file's folders
    end with, or a string holding the name
    (``importlib.import_module("train")``), counts as importing it; the name spelled otherwise does
    not -- another module of the same name (``from pkg.other_dir.train import f``), the file's name
    ``train.py`` (a copied header, a launcher's command line), a comment."""
    project = ctx.project
    if project is None or os.path.basename(ctx.path) == "__init__.py":
        return False

    def compute() -> bool:
        body = ctx.tree.body
        runs = any(isinstance(s, ast.If) and _is_main_guard(s.test) for s in body) or any(
            isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) for s in body
        )
        if not runs:
            return False
        sources = _sources(project)
        if sources is None:
            return False
        stem = os.path.splitext(os.path.basename(ctx.path))[0]
        home = file_key(ctx)
        spelled = re.compile(rb"(?<![\w])" + re.escape(stem.encode()) + rb"(?![\w])(?!\.py(?!\w))")
        candidates = [p for p in sources.mentioning(stem) if p != home and spelled.search(sources.files[p])]
        if len(candidates) > MAX_CANDIDATES:
            return False
        return not any(_may_import(project, path, stem, home) for path in candidates)

    return ctx.shared("liveness-script", compute)


def _may_import(project, path: str, stem: str, home: str) -> bool:
    """Whether the file at ``path``, which spells ``stem``, may import the module at ``home``."""
    if path.endswith(".ipynb"):
        return True
    other = project.context(path)
    if other is None:
        return not _unparsable(project_sources(project).files.get(path, b""))
    word = re.compile(r"(?<!\w)" + re.escape(stem) + r"(?!\w)(?!\.py(?!\w))")
    for node in ast.walk(other.tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and word.search(node.value):
            return True  # `importlib.import_module("pkg.train")`, `__import__(name)`
        if isinstance(node, ast.Import):
            named = [(0, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            named = [(node.level, base)] + [
                (node.level, f"{base}.{alias.name}" if base else alias.name) for alias in node.names
            ]
        else:
            continue
        for level, dotted in named:
            parts = dotted.split(".")
            if stem not in parts:
                continue
            module = project.resolve_import(other, level, dotted)
            if module is None:
                if parts[-1] == stem and _ends_with(os.path.dirname(home), parts[:-1]):
                    return True  # not found from there: it may be this file (`sys.path` set by hand)
            elif module.file and os.path.realpath(module.path) == home:
                return True
    return False


def _ends_with(directory: str, packages: list[str]) -> bool:
    """Whether the folders of ``directory`` end with ``packages`` (``pkg.sub`` of ``pkg.sub.train``):
    a module path that cannot be this file's names other folders."""
    folders = directory.split(os.sep)
    return not packages or folders[-len(packages) :] == packages


def _unparsable(data: bytes) -> bool:
    """Whether Python source is not valid syntax (a file left with merge-conflict markers): run or
    imported, it raises at once, so it imports nothing."""
    try:
        ast.parse(data)
    except SyntaxError:
        return True
    except (ValueError, RecursionError, MemoryError):
        return False
    return False
