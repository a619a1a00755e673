"""The evaluation fixes: TL005 `model.eval()` at the start of the evaluation, TL006 no autograd
there (`@torch.no_grad()` or `with torch.no_grad():`), TL007 `model.train()` after evaluating."""

from __future__ import annotations

import ast

from torchlint.analysis.callgraph import call_graph, resolve_local_call
from torchlint.analysis.imports import symbol
from torchlint.engine.finding import SAFE, UNSAFE, Fix
from torchlint.engine.fixers import (
    RuleFix,
    block_of,
    in_block,
    index_in,
    register_fix,
    root_name,
    statement_of,
    visible_at_start,
)
from torchlint.torchmodel.events import BACKWARD_KINDS
from torchlint.torchmodel.iterations import iterations

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _model_of(call: ast.Call) -> str | None:
    """``model`` of ``model(x)`` / ``model.forward(x)``; ``self.net`` of ``self.net(x)``."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "forward":
        func = func.value
    name = symbol(func)
    return name if name is not None and "[" not in name else None


def _in_reach(ctx, unit, name: str | None) -> bool:
    root = root_name(name)
    return root is not None and visible_at_start(ctx, root, unit.node)


def _reached_from_training(ctx, unit) -> bool:
    """The evaluation runs inside a training loop (directly, or its function is called from one)."""
    loops = iterations(ctx)
    if isinstance(unit.node, _FUNCTIONS):
        sites = call_graph(ctx).callers(unit.node)
        return any(loops.trains_each_iteration(loop) for site in sites for loop in ctx.enclosing_loops(site))
    return any(loops.trains_each_iteration(loop) for loop in ctx.enclosing_loops(unit.node))


@register_fix
class EvalModeFirst(RuleFix):
    codes = ("TL005",)
    applicabilities = (SAFE, UNSAFE)
    summary = """
        Inserts `model.eval()` (for the model the evaluation calls) as the first statement of the
        evaluation function, or just before the evaluation loop.
    """
    safety = """
        safe when the evaluation does not run inside a training loop: the model is evaluated with
        dropout off and batch-norm statistics frozen, and nothing trains afterwards. Unsafe when it
        does: training would then continue in eval mode until a `model.train()` follows (TL007's fix,
        applied in the next round, adds it).
    """
    EXAMPLES = [
        (
            """
import torch
def validate(model, loader):
    \"\"\"Mean loss over the validation set.\"\"\"
    total = 0.0
    with torch.no_grad():
        for x, y in loader:
            total += (model(x) - y).pow(2).mean().item()  # expect: TL005
    return total / len(loader)
model = torch.nn.Sequential(torch.nn.Linear(4, 1), torch.nn.Dropout(0.1))
model.load_state_dict(torch.load("regressor.pt"))
print(validate(model, val_loader))
""",
            """
import torch
def validate(model, loader):
    \"\"\"Mean loss over the validation set.\"\"\"
    model.eval()
    total = 0.0
    with torch.no_grad():
        for x, y in loader:
            total += (model(x) - y).pow(2).mean().item()  # expect: TL005
    return total / len(loader)
model = torch.nn.Sequential(torch.nn.Linear(4, 1), torch.nn.Dropout(0.1))
model.load_state_dict(torch.load("regressor.pt"))
print(validate(model, val_loader))
""",
        ),
    ]

    def plan(self, ctx, diagnostic):
        unit = diagnostic.evidence
        if unit is None or unit.phase is not None:
            return None  # the evaluation path of a two-phase function: a switch at its top would hit training too
        model = _model_of(unit.first_call)
        if model is None or not _in_reach(ctx, unit, model):
            return None
        code = f"{model}.eval()"
        applicability = UNSAFE if _reached_from_training(ctx, unit) else SAFE
        if isinstance(unit.node, _FUNCTIONS):
            return Fix(
                f"Call `{code}` first", applicability=applicability, build=lambda e: e.insert_first(unit.node, code)
            )
        return Fix(
            f"Call `{code}` before the loop",
            applicability=applicability,
            build=lambda e: e.insert_before(unit.node, code),
        )


@register_fix
class NoGradEvaluation(RuleFix):
    codes = ("TL006",)
    applicabilities = (SAFE,)
    summary = """
        Decorates the evaluation function with `@torch.no_grad()` (innermost decorator), or wraps the
        evaluation loop in `with torch.no_grad():`. `torch` is spelled as the file imports it (an
        `import torch` is added when nothing imports it).
    """
    safety = """
        the evaluation computes the same values without recording a graph; the rule leaves out code
        that needs gradients (a backward, `autograd.grad`, `requires_grad_`). Not offered for `async`
        functions, which the decorator would not cover.
    """
    EXAMPLES = [
        (
            """
import torch.nn as nn
class Trainer:
    def __init__(self, state):
        self.model = nn.Linear(4, 2)
        self.model.load_state_dict(state)
    @staticmethod
    def helper():
        pass
    def evaluate(self, loader):
        self.model.eval()
        return [self.model(x).argmax(1) for x in loader]  # expect: TL006
""",
            """
import torch.nn as nn
import torch
class Trainer:
    def __init__(self, state):
        self.model = nn.Linear(4, 2)
        self.model.load_state_dict(state)
    @staticmethod
    def helper():
        pass
    @torch.no_grad()
    def evaluate(self, loader):
        self.model.eval()
        return [self.model(x).argmax(1) for x in loader]  # expect: TL006
""",
        ),
        (
            """
import torch
def fit(model, train_loader, val_loader, optimizer):
    for x, y in train_loader:
        optimizer.zero_grad()
        model(x).sub(y).pow(2).mean().backward()
        optimizer.step()
    model.eval()
    for x, y in val_loader:
        print(model(x).sub(y).abs().mean())  # expect: TL006
""",
            """
import torch
def fit(model, train_loader, val_loader, optimizer):
    for x, y in train_loader:
        optimizer.zero_grad()
        model(x).sub(y).pow(2).mean().backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        for x, y in val_loader:
            print(model(x).sub(y).abs().mean())  # expect: TL006
""",
        ),
    ]

    def plan(self, ctx, diagnostic):
        unit = diagnostic.evidence
        node = getattr(unit, "node", None)
        if node is None or isinstance(node, ast.AsyncFunctionDef) or unit.phase is not None:
            return None  # (a two-phase function: no-grad around all of it would break its training path)
        if isinstance(node, ast.FunctionDef):
            return Fix(
                "Decorate with `@torch.no_grad()`",
                applicability=SAFE,
                build=lambda edit: edit.decorate(node, f"{edit.spell('torch.no_grad')}()"),
            )
        return Fix(
            "Run the loop under `torch.no_grad()`",
            applicability=SAFE,
            build=lambda edit: edit.wrap_with(node, f"{edit.spell('torch.no_grad')}()"),
        )


@register_fix
class TrainModeAfterEvaluation(RuleFix):
    codes = ("TL007",)
    applicabilities = (SAFE, UNSAFE)
    summary = """
        Inserts `model.train()` right after the call that evaluates (and switches to eval mode).
        When the switch is written in the training loop itself, inserts it at the start of the loop
        body if the evaluation ends the iteration, or before the block that trains next.
    """
    safety = """
        safe after an evaluation call: training resumes in training mode right after it. Unsafe for a
        switch written in the loop, where the end of the evaluation is inferred.
    """
    EXAMPLES = [
        (
            """
import torch
def evaluate(net, loader):
    net.eval()
    with torch.no_grad():
        return sum(net(x).sum().item() for x in loader)
def train(model, loader, val_loader, optimizer, epochs):
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            model(x).sub(y).pow(2).mean().backward()
            optimizer.step()
        score = evaluate(model, val_loader)  # expect: TL007
        print(epoch, score)
train(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)), loader, val_loader, opt, 10)
""",
            """
import torch
def evaluate(net, loader):
    net.eval()
    with torch.no_grad():
        return sum(net(x).sum().item() for x in loader)
def train(model, loader, val_loader, optimizer, epochs):
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            model(x).sub(y).pow(2).mean().backward()
            optimizer.step()
        score = evaluate(model, val_loader)  # expect: TL007
        model.train()
        print(epoch, score)
train(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)), loader, val_loader, opt, 10)
""",
        ),
        (
            """
import torch
def train(model, loader, val_loader, optimizer, epochs):
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            model(x).sub(y).pow(2).mean().backward()
            optimizer.step()
        model.eval()  # expect: TL007
        with torch.no_grad():
            print(sum(model(x).sum().item() for x, _ in val_loader))
train(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)), loader, val_loader, opt, 10)
""",
            """
import torch
def train(model, loader, val_loader, optimizer, epochs):
    for epoch in range(epochs):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            model(x).sub(y).pow(2).mean().backward()
            optimizer.step()
        model.eval()  # expect: TL007
        with torch.no_grad():
            print(sum(model(x).sum().item() for x, _ in val_loader))
train(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4)), loader, val_loader, opt, 10)
""",
        ),
    ]

    def plan(self, ctx, diagnostic):
        found = diagnostic.evidence
        if getattr(found, "target", None) is None:
            return None
        if found.site is not found.switch:
            return self._after_call(ctx, found)
        return self._in_loop(ctx, found)

    @staticmethod
    def _after_call(ctx, found):
        stmt = statement_of(ctx, found.site)
        model = _caller_spelling(ctx, found.site, found.target)
        root = root_name(model)
        if stmt is None or root is None or not ctx.is_inside(stmt, found.loop):
            return None
        if not (visible_at_start(ctx, root, found.loop) or root in _names_before(ctx, found.loop, stmt)):
            return None
        code = f"{model}.train()"
        return Fix(f"Call `{code}` after evaluating", applicability=SAFE, build=lambda e: e.insert_after(stmt, code))

    @staticmethod
    def _in_loop(ctx, found):
        model = found.target
        root = root_name(model)
        loop = found.loop
        if root is None or not visible_at_start(ctx, root, loop):
            return None
        code = f"{model}.train()"
        events = iterations(ctx).iteration_events(loop)
        index = next((i for i, e in enumerate(events) if e.site is found.switch or e.node is found.switch), None)
        if index is None:
            return None
        later = next((e for e in events[index + 1 :] if e.kind in BACKWARD_KINDS), None)
        if later is None:  # the evaluation ends the iteration: train again when the next one starts
            return Fix(
                f"Call `{code}` each iteration", applicability=UNSAFE, build=lambda e: e.insert_first(loop, code)
            )
        switch_stmt = statement_of(ctx, found.switch)
        block = block_of(ctx, switch_stmt)
        anchor = in_block(ctx, later.site, block) if block is not None else None
        if anchor is None or isinstance(anchor, ast.Expr) or index_in(block, anchor) <= index_in(block, switch_stmt):
            return None  # the backward's own statement: its forward may already have run
        return Fix(
            f"Call `{code}` before training again", applicability=UNSAFE, build=lambda e: e.insert_before(anchor, code)
        )


def _caller_spelling(ctx, site: ast.AST, target: str) -> str | None:
    """The model ``target`` names inside the evaluation function, as the caller spells it: the
    argument passed for a parameter (``evaluate(model)`` for ``def evaluate(net)``)."""
    func = resolve_local_call(ctx, site) if isinstance(site, ast.Call) else None
    root = root_name(target)
    if func is None or root is None:
        return target
    params = [a.arg for a in func.args.posonlyargs + func.args.args]
    if params and params[0] in ("self", "cls") and isinstance(site.func, ast.Attribute):
        if root == params[0]:
            return target if isinstance(site.func.value, ast.Name) and site.func.value.id == root else None
        params = params[1:]
    if root not in params:
        return target
    arg = next((kw.value for kw in site.keywords if kw.arg == root), None)
    index = params.index(root)
    if arg is None and index < len(site.args):
        arg = site.args[index]
    spelled = symbol(arg) if arg is not None else None
    if spelled is None or "[" in spelled:
        return None
    return spelled + target[len(root) :]


def _names_before(ctx, loop, stmt) -> set[str]:
    return {
        n.id
        for n in ast.walk(loop)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.lineno < stmt.lineno
    }
