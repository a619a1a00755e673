"""TL017 model-moved-after-optimizer."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from torchlint.analysis.imports import dotted_name
from torchlint.engine.rule import Message, Rule, register
from torchlint.torchmodel.calls import call_events
from torchlint.torchmodel.events import BACKWARD_KINDS, STEP_KINDS
from torchlint.torchmodel.roles import Role, object_roles, role_from_name

# Methods that move or cast a module's parameters.
MOVE_METHODS = frozenset({"to", "cuda", "half", "bfloat16", "double"})
PARAMETER_METHODS = frozenset({"parameters", "named_parameters"})
# Calls that show the optimizer was already put to use, so a later move is not "setup order".
_USE_KINDS = BACKWARD_KINDS | STEP_KINDS


@dataclass(frozen=True)
class _OptimizerBuild:
    assign: ast.Assign | ast.AnnAssign
    optimizer: str  # the symbol the optimizer is bound to
    sources: frozenset[str]  # symbols of the modules whose parameters it was given


@register
class ModelMovedAfterOptimizer(Rule):
    code = "TL017"
    name = "model-moved-after-optimizer"
    severity = "warning"
    summary = "The model is moved or cast after an optimizer was built from its parameters."
    what = """
        Reports `model.to(...)`, `model.cuda()`, `model.half()`, `model.bfloat16()` or
        `model.double()` that runs after an optimizer was constructed from that model's
        parameters (`SGD(model.parameters())`, `AdamW(model.named_parameters())`, param
        groups built from `model.encoder.parameters()`, `model.configure_optimizers(...)`)
        in the same function or script, before the optimizer was used.
    """
    why = """
        The PyTorch docs ask to move a model before constructing optimizers for it: an
        optimizer holds references to the parameter tensors it was given. Whenever the
        move creates new parameters (XLA/TPU, `torch.__future__` swap mode, FSDP-style
        wrappers) the optimizer keeps updating the stale ones and the model never
        learns; and optimizer state created or loaded before the move
        (`optimizer.load_state_dict(...)` on resume) stays on the old device or dtype,
        failing or silently mixing devices at the first step.
    """
    example = """
        model = Net()
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
        model.to("cuda")
    """
    instead = """
        model = Net()
        model.to("cuda")
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    """
    VALID = [
        """
import torch
def setup(device):
    model = torch.nn.Linear(4, 2).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batch = torch.randn(8, 4).to(device)
    return model, optimizer, batch
""",
    ]
    INVALID = [
        """
import torch
def setup(device):
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model = model.to(device)  # expect: TL017
    return model, optimizer
""",
    ]

    def check(self, ctx):
        moves = [c for c in ctx.calls if isinstance(c.func, ast.Attribute) and c.func.attr in MOVE_METHODS]
        if not moves:
            return
        builds = _optimizer_builds(ctx)
        if not builds:
            return
        for move in moves:
            moved = dotted_name(move.func.value)
            if moved is None or move.func.attr == "to" and not (move.args or move.keywords):
                continue
            scope = ctx.enclosing_function(move)
            for build in builds.get(scope, ()):
                if _moves_sources(ctx, moved, build.sources) and _is_setup_order(ctx, build, move, moved):
                    yield self.report(move, self._message(ctx, move, moved, build), evidence=build)
                    break

    @staticmethod
    def _message(ctx, move, moved, build) -> Message:
        return Message(
            f"`{ctx.segment(move)}` moves `{moved}` after `{build.optimizer}` was built from its parameters "
            f"(line {build.assign.lineno})",
            why="the optimizer can keep the pre-move tensors and its state stays on the old device or dtype",
            help=f"move the model first, then construct `{build.optimizer}`",
        )


def _optimizer_builds(ctx) -> dict:
    """Optimizer constructions of the file, by enclosing function (None: module level)."""
    roles = object_roles(ctx)
    builds: dict = {}
    for assign in ctx.nodes(ast.Assign, ast.AnnAssign):
        value = assign.value
        if not isinstance(value, ast.Call):
            continue
        targets = assign.targets if isinstance(assign, ast.Assign) else [assign.target]
        names = [dotted_name(t) for t in targets]
        name = next((n for n in names if n), None)
        if name is None:
            continue
        # What the assignment builds (a constructor, a factory of the file), else what its name says.
        built = roles.value_role(value)
        if (built if built is not None else role_from_name(name)) is not Role.OPTIMIZER:
            continue
        sources = _parameter_sources(roles, value)
        if sources:
            builds.setdefault(ctx.enclosing_function(assign), []).append(_OptimizerBuild(assign, name, sources))
    return builds


def _parameter_sources(roles, call: ast.Call) -> frozenset[str]:
    """Modules whose parameters an optimizer-building call receives."""
    found = set()
    func = call.func
    if isinstance(func, ast.Attribute) and roles.role_of(func.value) == Role.MODEL:
        found.add(dotted_name(func.value))  # model.configure_optimizers(...)
    for arg in list(call.args) + [k.value for k in call.keywords]:
        for node in ast.walk(arg):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in PARAMETER_METHODS
            ):
                found.add(dotted_name(node.func.value))
            elif node is arg and isinstance(node, (ast.Name, ast.Attribute)) and roles.role_of(node) == Role.MODEL:
                found.add(dotted_name(node))  # create_optimizer_v2(model, ...)
    found.discard(None)
    return frozenset(found)


def _moves_sources(ctx, moved: str, sources) -> bool:
    for source in sources:
        if moved == source or source.startswith(moved + "."):
            return True  # the module itself, or a module containing it
        if moved.startswith(source + ".") and object_roles(ctx).role_of(moved) == Role.MODEL:
            return True  # a submodule of it (its parameters are among the optimizer's)
    return False


def _is_setup_order(ctx, build: _OptimizerBuild, move: ast.Call, moved: str) -> bool:
    """The move follows the construction on the same path, before any training, with the
    model still the same object."""
    start = build.assign.end_lineno or build.assign.lineno
    if move.lineno <= start:
        return False
    if _exclusive_branches(ctx, build.assign, move):
        return False
    scope = ctx.enclosing_function(move)
    calls = call_events(ctx)
    for call in ctx.calls:
        if not start < call.lineno < move.lineno or ctx.enclosing_function(call) is not scope:
            continue
        event = calls.classify(call)
        if event is not None and event.kind in _USE_KINDS:
            return False
        if any(dotted_name(a) == build.optimizer for a in call.args) or any(
            dotted_name(k.value) == build.optimizer for k in call.keywords
        ):
            return False  # handed to a trainer or a training function
    holder = ctx.parent(move)
    for assign in ctx.nodes(ast.Assign):
        if start < assign.lineno < move.lineno and assign is not holder and ctx.enclosing_function(assign) is scope:
            if any(dotted_name(t) == moved for t in assign.targets):
                return False  # a different model now
    return True


def _exclusive_branches(ctx, first: ast.AST, second: ast.AST) -> bool:
    """Whether the two nodes sit in the body and the else of the same ``if``."""
    first_path = {}
    child = first
    for ancestor in ctx.ancestors(first):
        if isinstance(ancestor, ast.If):
            first_path[ancestor] = child in ancestor.body
        child = ancestor
    child = second
    for ancestor in ctx.ancestors(second):
        if ancestor in first_path:
            return first_path[ancestor] != (child in ancestor.body)
        child = ancestor
    return False
