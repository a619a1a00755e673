"""Script-level facts shared by the data-loading rules: which code runs when the file is
imported (outside ``if __name__ == "__main__":``), and what a ``DataLoader(...)`` call
was given (dataset, shuffle, sampler, workers), with names resolved through simple
assignments of the same function or of the module.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import resolve_local_call
from torchlint.analysis.conditions import never_runs
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.imports import dotted_name, symbol
from torchlint.analysis.nodes import argument, walk_no_scopes
from torchlint.torchmodel import vocabulary as torch_names

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
# Words that mark a loader as evaluation-only (its order and sharding do not matter for training).
EVAL_WORDS = re.compile(r"val|test|eval|dev(?!ice)|calib|pred|infer|bench", re.I)
TRAIN_WORDS = re.compile(r"train", re.I)


# ----- the main guard ---------------------------------------------------------------------------
# The `__name__` a worker process started with *spawn* gives the main script it re-imports.
WORKER_MAIN_NAME = "__mp_main__"


def true_when_reimported(test: ast.AST) -> bool | None:
    """What a test of ``__name__`` against string literals gives when a spawn worker re-imports the
    script (``__name__`` is then ``"__mp_main__"``): ``__name__ == "__main__"`` (or a disabled
    ``== "__main2__"``) is False, ``!=`` is True, ``in``/``not in`` a tuple of literals, ``not``,
    ``and``/``or`` combine them. None when the test depends on anything else."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        value = true_when_reimported(test.operand)
        return None if value is None else not value
    if isinstance(test, ast.BoolOp):
        values = [true_when_reimported(v) for v in test.values]
        decisive = isinstance(test.op, ast.Or)  # the value that settles the whole: True for `or`
        if decisive in values:
            return decisive
        return None if None in values else not decisive
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(right, ast.Name) and right.id == "__name__" and isinstance(op, (ast.Eq, ast.NotEq)):
        left, right = right, left
    if not (isinstance(left, ast.Name) and left.id == "__name__"):
        return None
    literals = _string_literals(right)
    if literals is None:
        return None
    if isinstance(op, (ast.Eq, ast.In)):
        return WORKER_MAIN_NAME in literals
    if isinstance(op, (ast.NotEq, ast.NotIn)):
        return WORKER_MAIN_NAME not in literals
    return None


def _string_literals(expr: ast.AST) -> set[str] | None:
    """The strings of a string literal or of a tuple, list or set of them; None otherwise."""
    items = expr.elts if isinstance(expr, (ast.Tuple, ast.List, ast.Set)) else [expr]
    if not all(isinstance(i, ast.Constant) and isinstance(i.value, str) for i in items):
        return None
    return {i.value for i in items}


def runs_at_import(ctx: FileContext, node: ast.AST) -> bool:
    """Whether ``node`` runs when a spawn worker re-imports the script: it is not inside a
    function, class or lambda, nor in a branch of an ``if`` on ``__name__`` that is not taken
    there (the body of ``if __name__ == "__main__":``, the ``else`` of ``if __name__ != "__main__":``),
    nor in a branch that constants of the file rule out (``evaluate = True`` bound once, then
    ``if evaluate: test(0) else: train()``: the ``else`` never runs)."""
    child = node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, _SCOPES):
            return False
        if isinstance(ancestor, ast.If) and child is not ancestor.test:
            taken = true_when_reimported(ancestor.test)
            if taken is not None and _in_list(child, ancestor.body) != taken:
                return False
        child = ancestor
    return not never_runs(ctx, node)


# Module-level expression statements that compute a value and drop it: in a notebook the last one
# of a cell is displayed; in a script they do nothing.
_DISPLAY_EXPRESSIONS = (ast.Name, ast.Attribute, ast.Subscript, ast.Compare, ast.BinOp, ast.Tuple, ast.List)


# IPython magics and shell escapes left as comments by an export (`# %matplotlib inline`,
# `# !pip install ...`, and `# ! pip install ...` as jupytext and other exporters space them: a
# lower-case command after the space, so that `# ! Note: ...` stays an ordinary comment), and cell
# markers (`# %%`, `# In[3]:`).
_NOTEBOOK_COMMENT = re.compile(r"^#\s?(%%|%[A-Za-z]|In\s?\[)|^# !([A-Za-z]| [a-z][\w.-]* )", re.M)


def written_as_notebook(ctx: FileContext) -> bool:
    """Code that runs as notebook cells, not as a script: a ``.ipynb`` file, or cells exported to a
    ``.py`` file, which show themselves by bare display expressions at module level (``device``,
    ``model.embedding.weight``, ``train_dir, test_dir``) or by IPython magics and cell markers left
    as comments. Notebook kernels do not re-import their code in worker processes, and
    ``if __name__ == "__main__":`` means nothing there."""
    if ctx.path.endswith(".ipynb"):
        return True
    if any(isinstance(stmt, ast.Expr) and _is_display_expression(stmt.value) for stmt in ctx.tree.body):
        return True
    return bool(_NOTEBOOK_COMMENT.search(ctx.source))


def exported_from_notebook(ctx: FileContext) -> bool:
    """A ``.py`` file with a notebook of the same name in its folder (``autoencoder.py`` next to
    ``autoencoder.ipynb``): the notebook's export, committed beside it, whose code is the notebook's
    cells. Reads the file system, so callers ask only when about to report; the notebook's path is
    recorded as consulted (present or not), so a cached result follows its creation or removal."""
    stem, extension = os.path.splitext(ctx.path)
    if extension != ".py":
        return False
    notebook = os.path.realpath(stem + ".ipynb")
    if ctx.project is not None:
        ctx.project.recorder.consulted(notebook)
    return os.path.isfile(notebook)


def _is_display_expression(expr: ast.AST) -> bool:
    """A value computed to be looked at (``device``, ``img.shape, label.shape``): no call in it,
    since a call may be run for its effect (``parser.add_argument(...),`` with a stray comma)."""
    return isinstance(expr, _DISPLAY_EXPRESSIONS) and not any(isinstance(n, ast.Call) for n in ast.walk(expr))


def _in_list(node: ast.AST, nodes: list) -> bool:
    return any(n is node for n in nodes)


# ----- values of names ----------------------------------------------------------------------------
def resolve_value(ctx: FileContext, expr: ast.AST) -> ast.AST:
    """The value a plain name stands for when it is assigned once in its scope (its function, or
    the module); ``expr`` itself otherwise (rebound, a parameter, ...)."""
    if not isinstance(expr, ast.Name):
        return expr
    value = dataflow(ctx).sole_value(expr)
    return expr if value is None else value


def int_value(ctx: FileContext, expr: ast.AST | None) -> int | None:
    """An integer literal, possibly through a name bound once to one."""
    if expr is None:
        return None
    value = resolve_value(ctx, expr)
    if isinstance(value, ast.Constant) and type(value.value) is int:
        return value.value
    return None


# ----- DataLoader calls --------------------------------------------------------------------------
@dataclass(frozen=True)
class LoaderCall:
    call: ast.Call

    def arg(self, name: str) -> ast.AST | None:
        """The expression given for a DataLoader parameter (keyword or positional), or None."""
        return argument(self.call, torch_names.DATALOADER_PARAMS.index(name), name)

    def given(self, name: str) -> bool:
        """Whether the parameter is given a value other than a literal None."""
        value = self.arg(name)
        if value is None:
            return any(k.arg is None for k in self.call.keywords)  # **kwargs may carry it
        return not (isinstance(value, ast.Constant) and value.value is None)


def dataloader_calls(ctx: FileContext) -> list[LoaderCall]:
    return [LoaderCall(c) for c in ctx.calls if ctx.call_qualname(c) == torch_names.DATALOADER]


def bound_name(ctx: FileContext, call: ast.Call) -> str | None:
    """What the DataLoader is called where it is built: the assigned symbol, the keyword it
    is passed as, or the name of the function that returns it."""
    parent = ctx.parent(call)
    if isinstance(parent, ast.Assign):
        return symbol(parent.targets[0])
    if isinstance(parent, ast.keyword) and parent.arg:
        return parent.arg
    if isinstance(parent, (ast.Return, ast.Dict, ast.Tuple)):
        func = ctx.enclosing_function(call)
        return func.name if func is not None else None
    return None


def loops_over(ctx: FileContext, call: ast.Call) -> list[ast.AST]:
    """The ``for`` loops of this file whose header iterates the object ``call`` builds (a name the
    data flow shows to hold it, through ``enumerate(...)``/``tqdm(...)`` and the like)."""
    flow = dataflow(ctx)
    return [
        loop
        for loop in ast.walk(ctx.tree)
        if isinstance(loop, (ast.For, ast.AsyncFor))
        and any(isinstance(n, ast.Name) and call in flow.origins(n) for n in ast.walk(loop.iter))
    ]


def is_distributed_sampler(ctx: FileContext, expr: ast.AST | None) -> ast.Call | None:
    """The ``DistributedSampler(...)`` call a sampler argument evaluates to (through one name
    and either branch of a conditional expression), or None."""
    if expr is None:
        return None
    value = resolve_value(ctx, expr)
    options = [value.body, value.orelse] if isinstance(value, ast.IfExp) else [value]
    for option in options:
        if isinstance(option, ast.Call) and ctx.call_qualname(option) == torch_names.DISTRIBUTED_SAMPLER:
            return option
    return None


def names_in(expr: ast.AST | None) -> str:
    """The identifiers of an expression, joined (for matching words such as "train"/"val")."""
    if expr is None:
        return ""
    return (
        " ".join(
            n.id if isinstance(n, ast.Name) else n.attr
            for n in ast.walk(expr)
            if isinstance(n, (ast.Name, ast.Attribute))
        )
        + " "
        + " ".join(n.value for n in ast.walk(expr) if isinstance(n, ast.Constant) and isinstance(n.value, str))
    )


def is_iterated_name(ctx: FileContext, name: ast.Name) -> bool:
    """Whether a name is consumed as an iterable: ``for _ in name``, ``enumerate(name)``,
    ``iter(name)``, a comprehension over it, or handed to another call (a training function)."""
    child: ast.AST = name
    for ancestor in ctx.ancestors(name):
        if isinstance(ancestor, (ast.For, ast.AsyncFor, ast.comprehension)):
            return child is ancestor.iter
        if isinstance(ancestor, ast.Call):
            func = dotted_name(ancestor.func) or ""
            return func not in NON_CONSUMING_CALLS and child is not ancestor.func
        if isinstance(ancestor, ast.keyword):
            child = ancestor
            continue
        if not isinstance(ancestor, (ast.Starred, ast.Tuple, ast.List)):
            return False
        child = ancestor
    return False


# Calls that look at a loader without iterating it.
NON_CONSUMING_CALLS = frozenset(
    {"len", "print", "str", "repr", "type", "isinstance", "id", "hasattr", "getattr", "setattr"}
)


# ----- what import-time code runs ------------------------------------------------------------------
def import_time_functions(ctx: FileContext, depth: int = 3) -> frozenset:
    """Functions of this file that module-level code (outside the main guard) calls,
    directly or through up to ``depth`` levels of local calls."""
    return ctx.shared(("import-time-functions", depth), lambda: _import_time_functions(ctx, depth))


def _import_time_functions(ctx: FileContext, depth: int) -> frozenset:
    reached: set = set()
    frontier = [c for c in ctx.calls if ctx.enclosing_function(c) is None and runs_at_import(ctx, c)]
    for _ in range(depth):
        called = {resolve_local_call(ctx, c) for c in frontier} - {None} - reached
        if not called:
            break
        reached |= called
        frontier = [c for c in ctx.calls if ctx.enclosing_function(c) in called]
    return frozenset(reached)


def refers_to_global(ctx: FileContext, name: ast.Name) -> bool:
    """Whether a name read inside a function means the module-level binding (it is not one
    of the function's parameters or assigned in it)."""
    flow = dataflow(ctx)
    return all(flow.scope_of(binding.stmt) is ctx.tree for binding in flow.reaching(name))


# ----- command-line defaults -------------------------------------------------------------------------
def argparse_default(ctx: FileContext, expr: ast.AST) -> ast.AST | None:
    """``args.workers`` -> the ``default=`` of ``parser.add_argument("--workers", ...)`` in this file."""
    option = argparse_option(ctx, expr)
    return None if option is None else next((k.value for k in option.keywords if k.arg == "default"), None)


def argparse_option(ctx: FileContext, expr: ast.AST) -> ast.Call | None:
    """``args.workers`` -> the ``parser.add_argument("--workers", ...)`` call of this file defining it."""
    if not isinstance(expr, ast.Attribute) or not isinstance(expr.value, ast.Name):
        return None
    wanted = expr.attr
    for call in _add_argument_calls(ctx):
        dest = next(
            (k.value.value for k in call.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)), None
        )
        flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        names = {dest} if dest else {f.lstrip("-").replace("-", "_") for f in flags if f.startswith("--")}
        if wanted in names:
            return call
    return None


def least_count(ctx: FileContext, expr: ast.AST) -> int | None:
    """The least value a count the code cannot fold is shown to hold: an integer literal (through
    a name bound once to one) holds itself; a command-line option of this file whose default is
    a non-negative integer literal and whose type is ``int`` (or not given) is a count, at least 0.
    None when nothing shows it."""
    literal = int_value(ctx, expr)
    if literal is not None:
        return literal
    option = argparse_option(ctx, expr)
    if option is None:
        return None
    keywords = {k.arg: k.value for k in option.keywords}
    kind, default = keywords.get("type"), keywords.get("default")
    if kind is not None and not (isinstance(kind, ast.Name) and kind.id == "int"):
        return None
    if "action" in keywords or "nargs" in keywords:
        return None
    if isinstance(default, ast.Constant) and type(default.value) is int and default.value >= 0:
        return 0
    return None


def _add_argument_calls(ctx: FileContext) -> list[ast.Call]:
    return [c for c in ctx.calls if isinstance(c.func, ast.Attribute) and c.func.attr == "add_argument"]


def reached_on_import(ctx: FileContext, node: ast.AST) -> bool:
    """Whether ``node`` runs when the module is imported: at module level outside the main
    guard, or inside a function that such code calls (``main()`` left unguarded)."""
    func = ctx.enclosing_function(node)
    if func is None:
        return runs_at_import(ctx, node)
    return func in import_time_functions(ctx)


# ----- the platform ----------------------------------------------------------------------------------
def linux_only_script(ctx: FileContext) -> bool:
    """Whether the file's import-time code shows it runs only on Linux, so that DataLoader workers are
    forked and never re-import it: module-level code that runs whatever happens (not under an
    ``if``, ``try``, loop or definition; an ``if``'s test does run) imports or uses a Linux-only
    module (``import torch_npu``, ``torch.npu.set_device(...)``: ``vocabulary.LINUX_ONLY_MODULES``),
    starts a process group on a Linux-only backend (``"hccl"``), or sets the ``"fork"`` start
    method. Cached per file."""
    return ctx.shared("linux-only-script", lambda: any(_linux_only(ctx, n) for n in _unconditional(ctx.tree.body)))


# Blocks whose code may not run (an `except` handler, one `case`), and definitions.
_CONDITIONAL_BLOCKS = (*_SCOPES, *(getattr(ast, name) for name in ("Try", "TryStar", "Match") if hasattr(ast, name)))


def _unconditional(body: list[ast.stmt]):
    """The nodes of module-level code that runs on every import, whatever the conditions."""
    for stmt in body:
        if isinstance(stmt, (ast.If, ast.While)):
            yield from walk_no_scopes(stmt.test)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                yield from walk_no_scopes(item.context_expr)
            yield from _unconditional(stmt.body)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            yield from walk_no_scopes(stmt.iter)
        elif not isinstance(stmt, _CONDITIONAL_BLOCKS):
            yield from walk_no_scopes(stmt)


def _linux_only(ctx: FileContext, node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(_linux_only_module(alias.name) for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return node.level == 0 and node.module is not None and _linux_only_module(node.module)
    if isinstance(node, (ast.Attribute, ast.Name)) and isinstance(node.ctx, ast.Load):
        qual = ctx.qualname(node)
        return qual is not None and _linux_only_module(qual)
    if not isinstance(node, ast.Call):
        return False
    qual = ctx.call_qualname(node)
    if qual in torch_names.START_METHOD_SETTERS:
        method = argument(node, 0, "method")
        return isinstance(method, ast.Constant) and method.value == torch_names.FORK_START_METHOD
    if qual in torch_names.PROCESS_GROUP_SETUP:
        backend = argument(node, 0, "backend")
        return isinstance(backend, ast.Constant) and backend.value in torch_names.LINUX_ONLY_BACKENDS
    return False


def _linux_only_module(name: str) -> bool:
    return any(name == module or name.startswith(module + ".") for module in torch_names.LINUX_ONLY_MODULES)
