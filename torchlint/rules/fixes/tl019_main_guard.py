"""TL019's fix: move the script's module-level code into `def main():`, called under
`if __name__ == "__main__":`."""

from __future__ import annotations

import ast

from torchlint.engine.finding import UNSAFE, Fix
from torchlint.engine.fixers import RuleFix, names_bound, names_read, register_fix

_DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_NAMES = ("main", "run_main", "main_script")


@register_fix
class MainGuard(RuleFix):
    codes = ("TL019",)
    applicabilities = (UNSAFE,)
    summary = """
        Moves the module-level statements that do the work (everything after the last import but
        definitions, constants and the docstring) into a `def main():` at the end of the file and
        calls it under `if __name__ == "__main__":`. Names those statements set that the file's
        functions read stay module globals (`global` in `main`).
    """
    safety = """
        importing the script no longer runs it, which is the point, but code that imports it
        for a name the moved statements set (`from train import model`) no longer finds it. Not offered
        when a definition that stays needs such a name when it is defined (a default argument, a class
        body), when the file already has a main guard, or when a moved statement cannot live in a function.
    """
    not_in_notebooks = """
        a notebook's cells run in the kernel's `__main__`, where the guard is always true and
        DataLoader workers never re-import the cells, so there is no script to guard; and the fix
        would move code out of every cell into a function after the last one.
    """
    EXAMPLES = [
        (
            '''
"""Train a tiny model."""
import torch
from torch.utils.data import DataLoader

BATCH = 4


def step(batch):
    return model(batch).sum()


model = torch.nn.Linear(1, 1)
loader = DataLoader(torch.randn(8, 1), batch_size=BATCH, num_workers=2)  # expect: TL019
for batch in loader:
    step(batch).backward()
''',
            '''
"""Train a tiny model."""
import torch
from torch.utils.data import DataLoader

BATCH = 4


def step(batch):
    return model(batch).sum()


def main():
    global model
    model = torch.nn.Linear(1, 1)
    loader = DataLoader(torch.randn(8, 1), batch_size=BATCH, num_workers=2)  # expect: TL019
    for batch in loader:
        step(batch).backward()


if __name__ == "__main__":
    main()
''',
        ),
    ]

    def plan(self, ctx, diagnostic):
        body = ctx.tree.body
        if any(_is_main_guard(stmt) for stmt in body):
            return None
        last_import = max((i for i, s in enumerate(body) if isinstance(s, (ast.Import, ast.ImportFrom))), default=-1)
        moved = [s for i, s in enumerate(body) if i > last_import and not _stays(s, i)]
        if not moved or not any(ctx.is_inside(diagnostic.node, s) or s is diagnostic.node for s in moved):
            return None
        if any(_cannot_move(s) for s in moved):
            return None
        kept = [s for s in body if s not in moved]
        bound = names_bound(moved)
        if _read_when_defined(kept) & bound:
            return None
        global_names = sorted(bound & _read_in_functions(kept))
        taken = names_bound(body)
        name = next((n for n in _NAMES if n not in taken), None)
        if name is None:
            return None
        return Fix(
            f'Run the script from `{name}()` under `if __name__ == "__main__":`',
            applicability=UNSAFE,
            build=lambda edit: edit.wrap_in_main(moved, name, global_names),
        )


def _stays(stmt: ast.stmt, index: int) -> bool:
    """Definitions, the docstring and constants stay at module level."""
    if isinstance(stmt, _DEFINITIONS):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return True
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
        return not any(isinstance(n, (ast.Call, ast.Await, ast.Yield, ast.NamedExpr)) for n in ast.walk(stmt.value))
    return False


def _is_main_guard(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.If) and "__name__" in {n.id for n in ast.walk(stmt.test) if isinstance(n, ast.Name)}


def _cannot_move(stmt: ast.stmt) -> bool:
    for node in ast.walk(stmt):
        if isinstance(node, (ast.Global, ast.Nonlocal, ast.Await, ast.Yield, ast.YieldFrom, ast.Return)):
            return True
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return True
    return False


def _read_when_defined(kept: list[ast.stmt]) -> set[str]:
    """Names the statements that stay read when the module runs: decorators, defaults, bases,
    annotations, class bodies, constant values."""
    found: set[str] = set()
    for stmt in kept:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = stmt.args
            for part in [*stmt.decorator_list, *args.defaults, *(d for d in args.kw_defaults if d is not None)]:
                found |= names_read(part)
        elif isinstance(stmt, ast.ClassDef):
            for part in [*stmt.decorator_list, *stmt.bases, *(k.value for k in stmt.keywords)]:
                found |= names_read(part)
            for inner in stmt.body:
                if not isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found |= names_read(inner)
                else:
                    found |= _read_when_defined([inner])
        else:
            found |= names_read(stmt)
    return found


def _read_in_functions(kept: list[ast.stmt]) -> set[str]:
    """Global names the functions (and methods) that stay read: names they read but neither take
    as parameters nor assign."""
    found: set[str] = set()
    for stmt in kept:
        for func in ast.walk(stmt):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            args = func.args
            local = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
            local |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
            body = func.body if isinstance(func.body, list) else [func.body]
            local |= names_bound(body)
            found |= {
                n.id for b in body for n in ast.walk(b) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            } - local
    return found
