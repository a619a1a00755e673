"""TL017 model-moved-after-optimizer."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from torchlint.analysis.conditions import never_runs
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.imports import dotted_name
from torchlint.engine.rule import Message, Rule, register
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.calls import call_events
from torchlint.torchmodel.constructors import prepared_element
from torchlint.torchmodel.events import STEP_KINDS
from torchlint.torchmodel.optimizer_state import call_fills_state, hands_optimizer, moves_state
from torchlint.torchmodel.roles import Role, object_roles, role_from_name
from torchlint.torchmodel.scripts import resolve_value

# Methods that move or cast a module's parameters.
MOVE_METHODS = frozenset({"to", "cuda", "half", "bfloat16", "double"})
# Events after which an optimizer holds state (its first step creates it).
_STATE_KINDS = STEP_KINDS


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
    summary = "The model is moved or cast after its optimizer was given state, or moved to new parameters."
    what = """
        Reports `model.to(...)`, `model.cuda()`, `model.half()`, `model.bfloat16()` or
        `model.double()` that runs after an optimizer was constructed from that model's
        parameters (`SGD(model.parameters())`, `AdamW(model.named_parameters())`, param
        groups built from `model.encoder.parameters()`, `model.configure_optimizers(...)`)
        in the same function or script, when the move leaves the optimizer stale: the
        optimizer already holds state on that path (`optimizer.load_state_dict(...)`, or a
        call handed the optimizer, such as a checkpoint loader or a training function,
        with the optimizer stepped or handed on again after the move -- saving its
        `state_dict()`, clearing its gradients or loading a new state is no step; a
        function of the project counts when its body steps the optimizer, loads its state
        or writes `optimizer.state`, and reading the optimizer -- `type(optimizer)`,
        printing, logging or formatting it into a string (`"{}".format(optimizer)`), its
        `param_groups` or `defaults` -- gives it none, nor do
        wrapping it, `amp.initialize(model, optimizer)` or `accelerator.prepare(...)`, and
        building a learning-rate scheduler on it), or the move is to an XLA device. A move
        in a call's arguments (`amp.initialize(model.cuda(), optimizer)`) runs before that
        call. A move right after building an
        optimizer that has no state yet is not reported: `Module.to` and the casts keep
        the Parameter objects on CPU and CUDA, and the first step creates the state on
        the new device; nor is plain SGD without momentum, whose state holds no tensors;
        nor a move followed by one of the optimizer's state tensors (a loop over
        `optimizer.state.values()` writing `v.to(device)` back into the state, or a
        function of the project doing so), which then sit wherever they were moved to;
        nor a move to where the model sat when the optimizer got its state (the same
        `model.cuda()` before the optimizer was built and loaded, or back after a
        `model.cpu()` around a save): the state is already there. State given in a
        branch whose condition constants decide false (`if resume and False:`) is given
        on no path.
    """
    why = """
        An optimizer holds references to the parameter tensors it was given, and state
        (momentum buffers, Adam moments) created on their device and dtype. State loaded
        before the model moves (`optimizer.load_state_dict(...)` on resume) stays on the
        old device or dtype: the next step fails ("expected dtype float", tensors on
        different devices) or silently mixes them. On an XLA device the move creates new
        parameter tensors, so the optimizer keeps updating the old ones and the model
        never learns.
    """
    example = """
        import torch

        model = Net()
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
        optimizer.load_state_dict(checkpoint["optimizer"])
        model.to("cuda")
    """
    instead = """
        import torch

        model = Net()
        model.to("cuda")
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
        optimizer.load_state_dict(checkpoint["optimizer"])
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
        """
import torch
def setup(device):
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model = model.to(device)  # no state yet: the parameters stay the same objects
    return model, optimizer
""",
    ]
    INVALID = [
        """
import torch
def resume(path, device):
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    optimizer.load_state_dict(torch.load(path)["optimizer"])
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
                if not _moves_sources(ctx, moved, build.sources):
                    continue
                stale = _stale_after_move(ctx, build, move, moved)
                if stale is not None:
                    yield self.report(move, self._message(ctx, move, moved, build, stale), evidence=build)
                    break

    @staticmethod
    def _message(ctx, move, moved, build, stale) -> Message:
        if stale.kind == "new-parameters":
            return Message(
                f"`{ctx.quote(move)}` moves `{moved}` to an XLA device after `{build.optimizer}` was built "
                f"from its parameters (line {build.assign.lineno})",
                why=f"the move creates new parameter tensors, so `{build.optimizer}` keeps updating the old ones "
                "and the model never learns",
                help=f"move the model first, then construct `{build.optimizer}`",
            )
        return Message(
            f"`{ctx.quote(move)}` moves `{moved}` after `{build.optimizer}` (built on line {build.assign.lineno}) "
            f"was given state on line {stale.evidence.lineno}",
            why=f"the state `{ctx.quote(stale.evidence, limit=60)}` gave it (momentum, Adam moments) stays on the "
            "old device or dtype, and the next step fails or mixes devices",
            help=f"move the model first, then construct `{build.optimizer}` and load its state",
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
                and node.func.attr in torch_names.PARAMETER_METHODS
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


@dataclass(frozen=True)
class _Stale:
    """Why a move after the optimizer's construction leaves it stale."""

    evidence: ast.AST  # the state loaded (`optimizer.load_state_dict(...)`, a call handed the optimizer), or the move
    kind: str  # "state": the optimizer holds state when the model moves; "new-parameters": the move makes new ones


def _stale_after_move(ctx, build: _OptimizerBuild, move: ast.Call, moved: str) -> _Stale | None:
    """The move follows the construction on the same path, with the model still the same object,
    and leaves the optimizer stale: it already holds state (loaded from a checkpoint, or handed to
    code that loads or steps it) and is used after the move, or the move makes new parameter
    tensors (an XLA device, an FSDP wrapper). ``Module.to`` and casts otherwise keep the Parameter
    objects, so an optimizer without state is unaffected."""
    start = build.assign.end_lineno or build.assign.lineno
    if move.lineno <= start or _exclusive_branches(ctx, build.assign, move):
        return None
    scope = ctx.enclosing_function(move)
    for binding in dataflow(ctx).reaching(moved, move):
        stmt = binding.stmt
        if (
            binding.kind in ("assign", "unpack")
            and start < stmt.lineno
            and ctx.enclosing_function(stmt) is scope
            and not _exclusive_branches(ctx, build.assign, stmt)
        ):
            return None  # a different model now
    if _makes_new_parameters(ctx, move):
        return _Stale(move, "new-parameters")
    state = _state_before(ctx, build, move, scope)
    if state is None or _keeps_no_tensors(ctx, build.assign.value) or _state_moved_after(ctx, build, move, scope):
        return None
    if _state_given_where_moved(ctx, build, move, moved, scope):
        return None
    loaded = isinstance(state.func, ast.Attribute) and state.func.attr == "load_state_dict"
    # State from training (a step, a trainer handed the optimizer) matters only if training goes on:
    # a model cast to half for export, or moved for inference, after training leaves an optimizer
    # that never steps again.
    if loaded or _steps_after(ctx, build, move, scope):
        return _Stale(state, "state")
    return None


def _state_before(ctx, build: _OptimizerBuild, move: ast.Call, scope) -> ast.AST | None:
    """A call between the construction and the move, on the same path, after which the optimizer
    holds state: ``optimizer.load_state_dict(...)``, a step, or a call handed the optimizer (a
    checkpoint loader or a training function)."""
    return next(_states_before(ctx, build, move, scope), None)


def _states_before(ctx, build: _OptimizerBuild, move: ast.Call, scope):
    """Every call ``_state_before`` accepts, in the order of the file."""
    start = build.assign.end_lineno or build.assign.lineno
    calls = call_events(ctx)
    for call in ctx.calls:
        if not start < call.lineno < move.lineno or ctx.enclosing_function(call) is not scope:
            continue
        if ctx.is_inside(move, call):
            continue  # the move is among its arguments, evaluated before the call runs
        if _exclusive_branches(ctx, build.assign, call) or _exclusive_branches(ctx, call, move):
            continue  # the other branch of an `if`: not on this path
        if never_runs(ctx, call):
            continue  # a branch its constants rule out (`if resume and False:`): dead code gives no state
        func = call.func
        loads = isinstance(func, ast.Attribute) and func.attr == "load_state_dict"
        event = calls.classify(call)
        if (
            (loads and dotted_name(func.value) == build.optimizer)
            or (event is not None and event.kind in _STATE_KINDS)
            or (hands_optimizer(call, build.optimizer) and call_fills_state(ctx, call, build.optimizer))
        ):
            yield call


def _state_given_where_moved(ctx, build: _OptimizerBuild, move: ast.Call, moved: str, scope) -> bool:
    """The optimizer got all its state while the model sat where ``move`` sends it: before each
    state-giving call, the model's latest move on the way there is the same move (``model.cuda()``
    before building and loading the optimizer, then ``model.cuda()`` again, or back after a
    ``model.cpu()`` around a save). State is created or loaded on the parameters' device, so it is
    already where the parameters are after this move."""
    states = list(_states_before(ctx, build, move, scope))
    return bool(states) and all(_same_move(ctx, _latest_move(ctx, moved, state, scope), move) for state in states)


# Calls that put a module's parameters somewhere (a device, a dtype).
_PLACING_METHODS = MOVE_METHODS | {"cpu", "float"}


def _latest_move(ctx, moved: str, node: ast.AST, scope) -> ast.Call | None:
    """The last move of ``moved`` that surely runs before ``node``, in the same function and on the
    same binding of the name; None when the latest move before it may not run (a branch) or none."""
    flow = dataflow(ctx)
    bindings = flow.reaching(moved, node)
    bound_at = [b.stmt.lineno for b in bindings]
    if not bound_at:
        return None
    enclosing = {id(a) for a in ctx.ancestors(node)}
    # `generator = Generator(...).to(device)`: the model is placed where it is built.
    placed_when_built = {id(b.value) for b in bindings if isinstance(getattr(b, "value", None), ast.Call)}
    latest = None
    for call in ctx.calls:
        func = call.func
        if not (
            isinstance(func, ast.Attribute)
            and func.attr in _PLACING_METHODS
            and (dotted_name(func.value) == moved or id(call) in placed_when_built)
        ):
            continue
        before = (call.lineno, call.col_offset) < (node.lineno, node.col_offset)
        if not before or ctx.enclosing_function(call) is not scope:
            continue
        if call.lineno < max(bound_at) or _exclusive_branches(ctx, call, node) or never_runs(ctx, call):
            continue
        if latest is None or (call.lineno, call.col_offset) > (latest.lineno, latest.col_offset):
            latest = call
    if latest is None:
        return None
    statement = next(a for a in [latest, *ctx.ancestors(latest)] if isinstance(a, ast.stmt))
    for _, block in ast.iter_fields(ctx.parent(statement)):
        if isinstance(block, list) and any(s is statement for s in block):
            return latest if any(id(s) in enclosing for s in block) else None
    return None


def _same_move(ctx, first: ast.Call | None, second: ast.Call) -> bool:
    """Two calls that put a module in the same place: the same method, the same arguments, names
    among them holding the same values at both."""
    if first is None or first.func.attr != second.func.attr:
        return False
    arguments = [*first.args, *first.keywords], [*second.args, *second.keywords]
    if [ast.dump(a) for a in arguments[0]] != [ast.dump(a) for a in arguments[1]]:
        return False
    flow = dataflow(ctx)
    names = [[n for a in args for n in ast.walk(a) if isinstance(n, ast.Name)] for args in arguments]
    return all(flow.reaching(a.id, a) == flow.reaching(b.id, b) for a, b in zip(*names))


def _state_moved_after(ctx, build: _OptimizerBuild, move: ast.Call, scope) -> bool:
    """The state follows the model: after the move, on the same path, the optimizer's state
    tensors are moved too (``for state in optimizer.state.values(): ... state[k] = v.to(device)``,
    or a function of the project doing so), so none is left on the old device or dtype."""
    end = move.end_lineno or move.lineno
    return any(
        stmt.lineno > end
        and ctx.enclosing_function(stmt) is scope
        and not _exclusive_branches(ctx, move, stmt)
        and moves_state(ctx, stmt, build.optimizer)
        for stmt in ctx.nodes(ast.For, ast.AsyncFor, ast.Expr)
    )


def _keeps_no_tensors(ctx, call: ast.AST) -> bool:
    """Plain SGD (no momentum): its state holds no tensors, so nothing can be left on the old device."""
    if not isinstance(call, ast.Call) or ctx.call_qualname(call) != "torch.optim.SGD":
        return False
    momentum = next((k.value for k in call.keywords if k.arg == "momentum"), None)
    if momentum is None and len(call.args) >= 3:
        momentum = call.args[2]
    return momentum is None or (isinstance(momentum, ast.Constant) and momentum.value == 0)


# What reading an optimizer without stepping it looks like: saving or inspecting its state, clearing
# gradients, or loading a state (which casts the state to the parameters' current device).
_NON_STEPPING_USES = frozenset({"state_dict", "load_state_dict", "zero_grad", "param_groups", "state", "defaults"})


def _steps_after(ctx, build: _OptimizerBuild, move: ast.Call, scope) -> bool:
    """The optimizer built by ``build`` may step after the move: it is stepped, handed on (to a
    training function, a trainer, a caller) or, kept on ``self``, read by another method of the
    class. Saving or inspecting its state, clearing its gradients or loading a state is no step,
    and a use of the name rebound to another optimizer is no use of this one (rebound to what a
    ``prepare``-like call hands back, ``model, optimizer = amp.initialize(model, optimizer)``, it
    is still this one)."""
    optimizer = build.optimizer
    end = move.end_lineno or move.lineno
    cls = ctx.enclosing(move, ast.ClassDef) if optimizer.startswith("self.") else None
    flow = dataflow(ctx)
    for node in ctx.nodes(ast.Name, ast.Attribute):
        if not isinstance(node.ctx, ast.Load) or dotted_name(node) != optimizer:
            continue
        where = ctx.enclosing_function(node)
        later = node.lineno > end and (where is scope or scope is None)
        if not later and not (cls is not None and where is not scope and ctx.is_inside(node, cls)):
            continue
        if isinstance(node, ast.Name) and flow.reaching(node.id, node):
            if build.assign.value not in flow.origins(node, unpacked=prepared_element):
                continue  # the name holds another optimizer by now (one `prepare` wraps is still this one)
        parent = ctx.parent(node)
        if isinstance(parent, ast.Attribute) and parent.value is node and parent.attr in _NON_STEPPING_USES:
            continue
        return True
    return False


def _makes_new_parameters(ctx, move: ast.Call) -> bool:
    """A move to an XLA device: its tensors cannot share the CPU parameters' storage, so
    ``.to()`` puts new Parameter objects in the module."""
    for arg in [*move.args, *(k.value for k in move.keywords)]:
        for value in (arg, resolve_value(ctx, arg)):
            for node in ast.walk(value):
                text = (
                    node.value
                    if isinstance(node, ast.Constant) and isinstance(node.value, str)
                    else getattr(node, "attr", None) or getattr(node, "id", None)
                )
                if isinstance(text, str) and "xla" in text.lower():
                    return True
    return False


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
