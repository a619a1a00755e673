"""TL019 dataloader-workers-without-main-guard."""

from __future__ import annotations

import ast
import re

from torchlint.analysis.callgraph import call_graph, parameter_default
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.imports import dotted_name
from torchlint.analysis.unpacking import call_argument, passes_unknown
from torchlint.engine.rule import Message, Rule, register
from torchlint.torchmodel.scripts import (
    NON_CONSUMING_CALLS,
    argparse_default,
    dataloader_calls,
    exported_from_notebook,
    import_time_functions,
    int_value,
    is_iterated_name,
    linux_only_script,
    reached_on_import,
    refers_to_global,
    resolve_value,
    runs_at_import,
    written_as_notebook,
)
from torchlint.torchmodel.vocabulary import FORK_START_METHOD

CPU_COUNT = frozenset({"os.cpu_count", "multiprocessing.cpu_count", "os.sched_getaffinity"})
# Modules the test runner imports: under spawn, workers re-import the *main* script, not them.
_TEST_FILE = re.compile(r"(^|[/\\])(test_[^/\\]*|[^/\\]*_test|conftest)\.py$")


@register
class DataLoaderWorkersWithoutMainGuard(Rule):
    code = "TL019"
    name = "dataloader-workers-without-main-guard"
    severity = "warning"
    summary = "A multi-worker DataLoader is iterated at module level, outside the main guard."
    what = """
        Reports a `DataLoader(..., num_workers=N)` with N > 0 (a literal, a module constant,
        an argparse option's default, a `**kwargs` dict, or `os.cpu_count()`) that is built
        and iterated by code that runs on import: module-level code outside
        `if __name__ == "__main__":`, or a function such code calls (a `main()` called
        without the guard), including a loader a helper builds and returns
        (`train_loader, val_loader = get_loaders(args)`) to such code. Building a loader
        starts no worker: one whose name is rebound before any iteration reaches it (a
        `loader = DataLoader(...)` shown and replaced by the next example) is not
        reported. A worker count
        passed as a parameter takes the values the import-time calls give it (or its
        default). Loaders built in functions that only the guard calls, and
        `num_workers=0`, are fine, and so is code under any other test of `__name__`
        that is false in a spawn worker, where `__name__` is `"__mp_main__"` (a guard
        switched off as `== "__main2__"`, the `else` of `!= "__main__"`), and code in a
        branch the file's own constants rule out (`evaluate = True`, bound once and never
        rebound, then `if evaluate: test(0)` `else: train()`: `train()` never runs); and so is
        notebook code (a `.ipynb`, or notebook cells exported to a script, told by bare
        display expressions such as `device`
        or `train_dir, test_dir` at module level, or by IPython magics and cell markers
        left as comments: `# %matplotlib inline`, `# !pip install ...`, `# %%`, or a `.py`
        file committed next to a notebook of the same name, `autoencoder.ipynb`, whose export
        it is): a
        notebook kernel does not re-import its cells in the workers, and the main guard
        means nothing there. Nor is a script reported that runs only on Linux, where workers
        are forked and never re-import it: its module-level code, unconditionally (not under
        an `if` or `try`), imports or uses a Linux-only module (`import torch_npu`,
        `torch.npu.set_device(...)`: the Ascend NPU stack ships for Linux only), starts a
        process group on the `"hccl"` backend, or sets the `"fork"` start method
        (`torch.multiprocessing.set_start_method("fork")`); nor a loader built with
        `multiprocessing_context="fork"`. A script that only offers such a device as an option
        (`if args.device == "npu": import torch_npu`) is still reported.
    """
    why = """
        Worker processes are started with the platform's start method. With *spawn* (the
        default on Windows and macOS, and whenever CUDA forces it) each worker imports the
        main script again; unguarded module-level code then builds and iterates the
        loader again inside the worker, which fails with "An attempt has been made to start
        a new process before the current process has finished its bootstrapping phase"
        or re-runs training. The script works on Linux (fork) and breaks elsewhere.
    """
    example = """
        from torch.utils.data import DataLoader

        loader = DataLoader(dataset, batch_size=64, num_workers=4)
        for epoch in range(10):
            for x, y in loader:
                train_step(x, y)
    """
    instead = """
        from torch.utils.data import DataLoader


        def main():
            loader = DataLoader(dataset, batch_size=64, num_workers=4)
            for epoch in range(10):
                for x, y in loader:
                    train_step(x, y)


        if __name__ == "__main__":
            main()
    """
    VALID = [
        """
from torch.utils.data import DataLoader
def main():
    loader = DataLoader(range(10), num_workers=2)
    for batch in loader:
        print(batch)
if __name__ == "__main__":
    main()
""",
    ]
    INVALID = [
        """
from torch.utils.data import DataLoader
loader = DataLoader(range(10), batch_size=2, num_workers=2)  # expect: TL019
for batch in loader:
    print(batch)
""",
    ]

    def check(self, ctx):
        if _TEST_FILE.search(ctx.path) or written_as_notebook(ctx):
            return
        findings = []
        for loader in dataloader_calls(ctx):
            call = loader.call
            if not reached_on_import(ctx, call) or _forked(loader):
                continue
            workers = next((w for w in _worker_expressions(ctx, loader) if _positive_workers(ctx, w)), None)
            if workers is not None and _iterated_at_import(ctx, call):
                findings.append(self.report(call, self._message(ctx, workers)))
        if findings and not exported_from_notebook(ctx) and not linux_only_script(ctx):
            yield from findings  # a notebook's committed export is its cells: no script advice

    @staticmethod
    def _message(ctx, workers) -> Message:
        return Message(
            f"`DataLoader(..., num_workers={ctx.quote(workers)})` is iterated at import time, "
            'outside `if __name__ == "__main__":`',
            why="the code that builds and iterates it runs at import; with the spawn start method (Windows, "
            "macOS) every worker re-imports this script and re-runs this code, and the run crashes",
            help='move the training code into a `main()` function called under `if __name__ == "__main__":`',
        )


def _forked(loader) -> bool:
    """``DataLoader(..., multiprocessing_context="fork")``: its workers never re-import the script."""
    context = next((k.value for k in loader.call.keywords if k.arg == "multiprocessing_context"), None)
    return isinstance(context, ast.Constant) and context.value == FORK_START_METHOD


def _worker_expressions(ctx, loader):
    """``num_workers=`` as given, or as carried by a ``**kwargs`` dict built in the file."""
    given = loader.arg("num_workers")
    if given is not None:
        yield given
        return
    for keyword in loader.call.keywords:
        if keyword.arg is not None:
            continue
        value = resolve_value(ctx, keyword.value)
        for option in (value.body, value.orelse) if isinstance(value, ast.IfExp) else (value,):
            if isinstance(option, ast.Dict):
                for key, item in zip(option.keys, option.values):
                    if isinstance(key, ast.Constant) and key.value == "num_workers":
                        yield item


def _positive_workers(ctx, workers, depth: int = 0) -> bool:
    passed = _parameter_values(ctx, workers) if depth < MAX_RETURN_DEPTH else None
    if passed is not None:
        # `def make_loader(train, workers=8)`: what the calls that run on import pass (or the default).
        return any(_positive_workers(ctx, value, depth + 1) for value in passed)
    if isinstance(workers, ast.Call) and dotted_name(workers.func) == "int" and len(workers.args) == 1:
        workers = workers.args[0]
    count = int_value(ctx, workers)
    if count is None:
        default = argparse_default(ctx, workers)
        count = int_value(ctx, default) if default is not None else None
    if count is not None:
        return count > 0
    value = resolve_value(ctx, workers)
    return isinstance(value, ast.Call) and ctx.call_qualname(value) in CPU_COUNT


MAX_RETURN_DEPTH = 3  # how many `return loader` hops to follow back to the callers


def _parameter_values(ctx, expr) -> list[ast.AST] | None:
    """For a parameter of the enclosing function that it never reassigns: the values the calls
    of this file that run on import give it (the default where they leave it out); None for
    anything else."""
    func = ctx.enclosing_function(expr)
    if not isinstance(expr, ast.Name) or func is None or resolve_value(ctx, expr) is not expr:
        return None
    args = func.args
    if expr.id not in {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}:
        return None
    values = []
    for site in call_graph(ctx).callers(func):
        if not reached_on_import(ctx, site):
            continue
        given = call_argument(ctx, site, func, expr.id)
        if given is None and passes_unknown(ctx, site):
            continue
        given = given if given is not None else parameter_default(func, expr.id)
        if given is not None:
            values.append(given)
    return values


def _iterated_at_import(ctx, call: ast.Call) -> bool:
    """The loader is consumed by import-time code: directly (``for b in DataLoader(...)``), or
    through the global it is assigned to, at module level or in a function that module-level
    code calls (``def train(): for b in loader: ...`` then ``train()``), or returned by a
    function of this file (``return train_loader, val_loader``) to a caller that does so."""
    return _consumed(ctx, call, None, 0)


def _consumed(ctx, value: ast.AST, index: int | None, depth: int) -> bool:
    """Whether import-time code iterates ``value`` (element ``index`` of it, when it is a tuple)."""
    parent = ctx.parent(value)
    if isinstance(parent, ast.Tuple) and index is None and isinstance(ctx.parent(parent), ast.Return):
        return _returned(ctx, ctx.parent(parent), parent.elts.index(value), depth)
    if isinstance(parent, ast.Return):
        return _returned(ctx, parent, index, depth)
    if isinstance(parent, ast.Assign):
        return _name_consumed(ctx, value, _bound_names(parent, index), depth)
    if index is not None:
        return False
    node: ast.AST = value
    for ancestor in ctx.ancestors(value):
        if isinstance(ancestor, (ast.For, ast.AsyncFor, ast.comprehension)):
            return node is ancestor.iter
        if isinstance(ancestor, ast.Call) and node is not ancestor.func:
            # next(iter(DataLoader(...))), train(model, DataLoader(...))
            return (dotted_name(ancestor.func) or "") not in NON_CONSUMING_CALLS
        if isinstance(ancestor, ast.stmt):
            return False
        node = ancestor
    return False


def _bound_names(assign: ast.Assign, index: int | None) -> set[str]:
    """Names the assigned value (element ``index`` of it) is bound to."""
    names = set()
    for target in assign.targets:
        if index is not None and isinstance(target, (ast.Tuple, ast.List)):
            if index < len(target.elts) and not any(isinstance(e, ast.Starred) for e in target.elts):
                target = target.elts[index]
        if index is None or target not in assign.targets:
            if isinstance(target, ast.Name):
                names.add(target.id)
    return names


def _name_consumed(ctx, value: ast.AST, targets: set[str], depth: int) -> bool:
    if not targets:
        return False
    home = ctx.enclosing_function(value)
    called = import_time_functions(ctx)
    assign = ctx.parent(value)
    for name in ctx.nodes(ast.Name):
        if name.id not in targets or not isinstance(name.ctx, ast.Load):
            continue
        where = ctx.enclosing_function(name)
        if where is home and not any(b.stmt is assign for b in dataflow(ctx).reaching(name)):
            continue  # rebound before this use (`loader = DataLoader(...)` again): another loader
        if where is home and name.lineno > value.lineno and home is not None:
            parent = ctx.parent(name)
            returned = parent if isinstance(parent, ast.Return) else ctx.parent(parent)
            if isinstance(returned, ast.Return) and _consumed(ctx, name, None, depth):
                return True  # `return loader` / `return train_loader, val_loader`
        if not is_iterated_name(ctx, name):
            continue
        if where is home:  # the same module level or function, further down
            if name.lineno > value.lineno and (home is not None or runs_at_import(ctx, name)):
                return True
        elif home is None and where in called and refers_to_global(ctx, name):
            return True
    return False


def _returned(ctx, ret: ast.Return, index: int | None, depth: int) -> bool:
    """The function returning the loader is called by import-time code that iterates the result."""
    func = ctx.enclosing_function(ret)
    if func is None or depth >= MAX_RETURN_DEPTH:
        return False
    return any(
        reached_on_import(ctx, site) and _consumed(ctx, site, index, depth + 1)
        for site in call_graph(ctx).callers(func)
    )
