"""Which loops continue one training run, and which repeat whole, independent runs.

Building a model or an optimizer inside a loop is a bug when the loop's
iterations continue one training run (epochs, batches, steps): each iteration
throws away the weights or the optimizer state (momentum, Adam moments) of the
previous one. It is correct when the loop repeats a whole run: k-fold splits,
trials, seeds, hyper-parameter values, tasks, federated rounds. Both shapes look
alike (a loop around a training loop), so the verdict combines three clues:

* how deep the optimizer steps sit below the loop: steps in the loop's own
  iteration mean a per-step loop; steps two loops down mean the loop's body holds
  a whole epoch-and-batch run;
* the names the loop is written with (``for epoch in ...``, ``for x, y in
  loader`` versus ``for fold, (tr, va) in enumerate(kf.split(X))``, ``for seed in
  seeds``, ``for lr in lrs``);
* data flow: an optimizer rebuilt each iteration over a model that is *not*
  rebuilt keeps training that model (one run continues); a model rebuilt
  together with its optimizer starts a fresh run.

Constructors inside a function are judged at the function's call sites too (an
optimizer built inside ``train_one_epoch`` that the epoch loop calls), and calls
to local factories (``def build_optimizer(model): return SGD(...)``) count as
constructors at their call site, wherever they are defined (``from models import build_model``:
the factories of another file of the project are found in that file, once per run).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from torchlint.analysis.callgraph import call_graph, calls_elsewhere, resolve_function_name
from torchlint.analysis.containers import loop_target_values, written_items
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.definitions import Definition
from torchlint.analysis.lazy_init import lasting_first_use_guard, outlives_call, resets, returns_holder
from torchlint.analysis.nodes import argument, argument_for, end_position, last_name, name_ids, returns_of
from torchlint.analysis.summaries import function_summary
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.constructors import constructor_role, optimizer_holds_state
from torchlint.torchmodel.events import BACKWARD_KINDS, STEP_KINDS, EventKind
from torchlint.torchmodel.fresh_runs import (
    builds_fresh_run,
    hands_own_model_to_run,
    optimizes_new_tensors,
    trained_state_used_up_in_iteration,
)
from torchlint.torchmodel.gradmode import module_run_only_without_grad
from torchlint.torchmodel.iterations import iterations
from torchlint.torchmodel.module_growth import grown_before
from torchlint.torchmodel.phases import runs_when_called
from torchlint.torchmodel.roles import Role, object_roles
from torchlint.torchmodel.walk import event_walker

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

# Names a loop is written with, split on "_" (``num_epochs`` -> num, epochs).
EPOCH_TOKENS = frozenset({"epoch", "epochs", "ep"})
STEP_TOKENS = frozenset(
    {
        "step",
        "steps",
        "iter",
        "iters",
        "iteration",
        "iterations",
        "it",
        "batch",
        "batches",
        "minibatch",
        "minibatches",
        "loader",
        "dataloader",
        "update",
        "updates",
    }
)
RUN_TOKENS = frozenset(
    {
        "fold",
        "folds",
        "kfold",
        "kf",
        "skf",
        "cv",
        "split",
        "splits",
        "trial",
        "trials",
        "seed",
        "seeds",
        "run",
        "runs",
        "repeat",
        "repeats",
        "rep",
        "reps",
        "repetition",
        "repetitions",
        "experiment",
        "experiments",
        "exp",
        "exps",
        "hparam",
        "hparams",
        "hyperparam",
        "hyperparams",
        "hyperparameter",
        "hyperparameters",
        "grid",
        "sweep",
        "lr",
        "lrs",
        "round",
        "rounds",
        "client",
        "clients",
        "task",
        "tasks",
        "stage",
        "stages",
        "model",
        "models",
        "arch",
        "archs",
        "architecture",
        "architectures",
        "candidate",
        "candidates",
        "dataset",
        "datasets",
        "env",
        "envs",
        "config",
        "configs",
        "cfg",
        "cfgs",
        "setting",
        "settings",
        "restart",
        "restarts",
    }
)
# Names that qualify a namespace rather than the loop (``range(cfg.epochs)``): only
# looked at when they are the loop variable itself.
_NAMESPACE_TOKENS = frozenset({"config", "configs", "cfg", "cfgs", "setting", "settings", "args", "hparams"})

# torch.nn layers that carry no trainable state of their own: building one per iteration costs nothing.
STATELESS_LAYERS = torch_names.WEIGHTLESS_LAYERS | torch_names.WRAPPING_LAYERS
_ZOO_HELPER = re.compile(r"param|checkpoint|load|resume|save|name|state|list_|register|^is_|^has_|utils|weight|adapt")
_NOT_A_MODEL_CLASS = re.compile(r"(Loss|Criterion|Metric|Metrics)$")
# Calls that give the iteration a fresh model without a constructor.
_MODEL_REFRESH_METHODS = frozenset({"load_state_dict", "reset_parameters", "apply"})
_MODEL_REFRESH_FUNCTIONS = frozenset({"copy.deepcopy", "torch.load", "torch.hub.load", "torch.jit.load"})

CONTINUING = "continuing"  # the loop's iterations continue one run
INDEPENDENT = "independent"  # the loop repeats whole runs


@dataclass(frozen=True)
class RebuiltInLoop:
    """A constructor that runs again in every iteration of a loop continuing one run."""

    loop: ast.AST  # the loop whose iterations continue one run
    via: tuple  # call sites between the loop and the constructor (outermost first)
    reason: str  # "step", "epoch", "keeps-model", "keeps-optimizer": why the loop continues one run
    partner_rebuilt: bool  # the optimizer (for a model) or model (for an optimizer) is rebuilt there too


class Constructions:
    """What a file builds: calls that construct a model or an optimizer with trainable state,
    directly or through a local factory, and where models or optimizers are (re)built."""

    def __init__(self, ctx: FileContext):
        self.ctx = ctx

    def built_role(self, call: ast.Call) -> str | None:
        """Role.MODEL when ``call`` builds a model with trainable weights, Role.OPTIMIZER when it builds
        an optimizer (whether it can hold state is asked where a rebuilt one would lose it)."""
        role = constructor_role(self.ctx, call)
        if role == Role.MODEL:
            qual = self.ctx.call_qualname(call) or ""
            last = qual.rsplit(".", 1)[-1] if qual else (last_name(call.func) or "")
            if qual.startswith("torch.nn.") and last in STATELESS_LAYERS:
                return None
            if last and _NOT_A_MODEL_CLASS.search(last):
                return None
            if qual.startswith(("timm.", "torchvision.")) and last[:1].islower() and _ZOO_HELPER.search(last):
                return None  # `timm.models.model_parameters(model)`, `load_checkpoint(...)`: helpers, not builders
            return Role.MODEL
        return role if role == Role.OPTIMIZER else None

    @cached_property
    def _direct(self) -> list[tuple[ast.Call, str]]:
        found = [(call, role) for call in self.ctx.calls if self._may_build(call) and (role := self.built_role(call))]
        # `nn.Sequential(nn.Linear(...), ...)` is one model: keep the outermost constructor.
        models = {call for call, role in found if role == Role.MODEL}
        return [
            (call, role)
            for call, role in found
            if role != Role.MODEL
            or not isinstance(self.ctx.parent(call), ast.Call)
            or self.ctx.parent(call) not in models
        ]

    def _may_build(self, call: ast.Call) -> bool:
        """A cheap pre-filter before import resolution: constructors are capitalised, or
        known factories (`from_pretrained`, `create_model`, `torchvision.models.resnet18`)."""
        func = call.func
        if isinstance(func, ast.Name):
            return func.id[:1].isupper() or func.id in self._model_functions
        if isinstance(func, ast.Attribute):
            if func.attr[:1].isupper() or func.attr in ("from_pretrained", "create_model"):
                return True
            root = func.value
            while isinstance(root, ast.Attribute):
                root = root.value
            return isinstance(root, ast.Name) and root.id in self._model_functions
        return False

    @cached_property
    def _model_functions(self) -> frozenset[str]:
        """Names imported from model zoos (`from torchvision.models import resnet18`)."""
        return frozenset(
            alias for alias, qual in self.ctx.imports.aliases.items() if qual.startswith(("torchvision", "timm"))
        )

    @cached_property
    def factories(self) -> dict[ast.AST, str]:
        """Local functions that return what they build (`return SGD(...)`, `opt = SGD(...); return opt`)."""
        ctx = self.ctx
        found: dict[ast.AST, str] = {}
        for call, role in self._direct:
            parent = ctx.parent(call)
            func = ctx.enclosing_function(call)
            if func is None or func in found:
                continue
            # What it builds reaches a `return` (`return SGD(...)`, `opt = SGD(...); return opt`).
            flow = dataflow(ctx)
            returned = isinstance(parent, ast.Return) or any(
                call in flow.origins(ret.value) for ret in returns_of(func) if ret.value is not None
            )
            # A `run_epoch()` that builds, trains and returns its model is judged inside, not as a factory.
            if returned and not function_trains(self.ctx, func):
                found[func] = role
        return found

    @cached_property
    def _constructions(self) -> list[tuple[ast.Call, str]]:
        found = list(self._direct)
        graph = call_graph(self.ctx)
        for func, role in self.factories.items():
            found.extend((site, role) for site in graph.callers(func))
        found.extend(self._factory_calls_elsewhere())
        found.extend((call, Role.OPTIMIZER) for call in self.ctx.calls if self._calls_optimizer_factory_value(call))
        found.sort(key=lambda item: (item[0].lineno, item[0].col_offset))
        return found

    def _factory_calls_elsewhere(self) -> list[tuple[ast.Call, str]]:
        """Calls of factories defined in another file of the project."""
        found = []
        for call, callee in calls_elsewhere(self.ctx).items():
            role = function_summary(callee, "torch.factory", _factory_role, None)
            if role is not None:
                found.append((call, role))
        return found

    def _calls_optimizer_factory_value(self, call: ast.Call) -> bool:
        """``call`` calls a name whose every value is a function building an optimizer over what it
        is handed (``make = configs[name]``, ``for name, make in configs.items()``, with entries
        ``lambda p: optim.SGD(p, lr=0.1)`` or local factories): whichever is drawn, the call
        builds a new optimizer."""
        func = call.func
        if not isinstance(func, ast.Name):
            return False
        bindings = dataflow(self.ctx).reaching(func)
        if not bindings:
            return False
        values: list[ast.AST | None] = []
        for binding in bindings:
            if binding.kind == "for":
                values += loop_target_values(self.ctx, binding)
            elif binding.kind == "assign" and isinstance(binding.value, ast.Subscript):
                values += written_items(self.ctx, binding.value)
            else:
                return False
        return bool(values) and all(self._builds_optimizer_from_argument(value) for value in values)

    def _builds_optimizer_from_argument(self, value: ast.AST | None) -> bool:
        """``value`` is a lambda whose body builds an optimizer over its first parameter
        (``lambda m: SGD(m.parameters())``), or names a local optimizer factory."""
        if isinstance(value, ast.Lambda):
            body, params = value.body, value.args.posonlyargs + value.args.args
            if not (params and isinstance(body, ast.Call) and self.built_role(body) == Role.OPTIMIZER):
                return False
            given = argument(body, 0, "params")
            return given is not None and params[0].arg in name_ids(given)
        if isinstance(value, ast.Name):
            found = resolve_function_name(self.ctx, value.id, value)
            return found is not None and self.factories.get(found) == Role.OPTIMIZER
        return False

    def constructions(self) -> list[tuple[ast.Call, str]]:
        """Every call that builds a model or optimizer: constructors, and calls to local factories."""
        return self._constructions

    def is_fresh_model(self, value: ast.Call) -> bool:
        """A copy of a model made this iteration (``copy.deepcopy(model)``, ``maml.clone()``): the model
        it copies keeps learning. A model *constructed* this iteration is judged on its own (TL003),
        and its optimizer with it: fixing one of the two would leave the other rebuilt."""
        if self.ctx.call_qualname(value) == "copy.deepcopy":
            return True
        return isinstance(value.func, ast.Attribute) and value.func.attr in ("clone", "copy", "deepcopy")

    def rebuilds(self, loop, role: str) -> bool:
        """Whether one iteration of ``loop`` builds (or reloads) an object of ``role``."""
        return any(self.ctx.is_inside(site, loop) for site in self._rebuild_sites(role))

    def _rebuild_sites(self, role: str) -> list[ast.AST]:
        """Calls that build an object of ``role``, plus call sites of functions that do."""

        def build() -> list[ast.AST]:
            direct = [c for c, r in self.constructions() if r == role]
            if role == Role.MODEL:
                direct += [c for c in self.ctx.calls if self._refreshes_model(c)]
            sites = list(direct)
            graph = call_graph(self.ctx)
            for c in direct:  # one level of helpers: `def make(): model = Net(); ...` called in the loop
                func = self.ctx.enclosing_function(c)
                if func is not None:
                    sites.extend(graph.callers(func))
            return sites

        return self.ctx.shared(f"rebuild-sites-{role}", build)

    def _refreshes_model(self, call: ast.Call) -> bool:
        if self.ctx.call_qualname(call) in _MODEL_REFRESH_FUNCTIONS:
            return True
        func = call.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr in _MODEL_REFRESH_METHODS
            and (object_roles(self.ctx).role_of(func.value) == Role.MODEL)
        )


def function_trains(ctx: FileContext, func) -> bool:
    """Whether one call of ``func`` runs a backward or an optimizer step."""
    return any(e.kind in BACKWARD_KINDS | STEP_KINDS for e in event_walker(ctx).function_events(func))


class RunAnalysis:
    """Which loops continue one training run, and the constructions they repeat."""

    MAX_CALL_DEPTH = 3

    def __init__(self, ctx: FileContext):
        self.ctx = ctx
        self.built = Constructions(ctx)
        self._reach_cache: dict = {}

    def _trains(self, loop) -> bool:
        return iterations(self.ctx).trains_each_iteration(loop)

    def rebuilt(self, role: str) -> list[tuple[ast.Call, RebuiltInLoop]]:
        """Constructions of ``role`` (Role.MODEL or Role.OPTIMIZER) that run again in every iteration
        of a loop continuing one training run, with that loop."""
        found = []
        for call, built in self.built.constructions():
            if built == role and (role != Role.OPTIMIZER or optimizer_holds_state(self.ctx, call)):
                # An optimizer that cannot hold state loses nothing when it is built again.
                if role == Role.MODEL and module_run_only_without_grad(self.ctx, call):
                    continue  # run only with autograd off (an augmentation network): nothing trains it
                where = self.rebuilt_in_loop(call, role)
                if where is not None:
                    found.append((call, where))
        return found

    def rebuilt_in_loop(self, call: ast.Call, role: str) -> RebuiltInLoop | None:
        """The loop continuing one training run that rebuilds ``call``'s object every iteration."""
        if role == Role.OPTIMIZER and grown_before(self.ctx, call):
            return None  # the model was given new parameters (a new head): the optimizer must take them
        if self._lazy_getter_call(call):
            return None  # `opt = get_optimizer(opt, ...)` whose body builds only `if opt is None:`
        return self._search(call, role, via=(), depth=0, seen=frozenset())

    def _lazy_getter_call(self, call: ast.Call) -> bool:
        """``call`` calls a local factory whose constructions all sit under a first-use guard on a
        parameter it hands back (``if opt is None: opt = Adam(...)`` ... ``return opt``), and stores the
        result into the holder it passed for that parameter, which no loop around empties again."""
        graph = call_graph(self.ctx)
        for func in self.built.factories:
            if call not in graph.callers(func):
                continue
            built = [c for c, _ in self.built._direct if self.ctx.enclosing_function(c) is func]
            holders = set()
            for inner in built:
                lazy = lasting_first_use_guard(self.ctx, inner, func)
                if lazy is None or not returns_holder(func, lazy[1]):
                    return False
                holders.add(lazy[1])
            return len(holders) == 1 and self._kept_by_caller(call, func, holders.pop())
        return False

    def _search(self, node, role, via, depth, seen) -> RebuiltInLoop | None:
        ctx = self.ctx
        for loop in ctx.enclosing_loops(node):
            if not self._trains(loop):
                continue  # a loop that trains nothing (building layers, iterating configs)
            if self._conditional_in(node, loop) or self._built_once_in(node, loop):
                return None  # built once, when a condition holds (lazy init, a switch at some epoch)
            if role == Role.OPTIMIZER and not via and self._optimizes_fresh_copy(node, loop):
                return None  # an inner optimizer over a model copied this iteration (meta-learning, probes)
            if not via and self._loaded_after(node, loop):
                return None  # `m = Net(); m.load_state_dict(...)`: a copy to evaluate or a resumed state
            verdict, reason = self.judge(loop, role)
            if verdict == CONTINUING:
                partner = Role.MODEL if role == Role.OPTIMIZER else Role.OPTIMIZER
                return RebuiltInLoop(loop, via, reason, self.built.rebuilds(loop, partner))
            return None  # the loop repeats whole runs, and so do the loops around it
        func = ctx.enclosing_function(node)
        if func is None or depth >= self.MAX_CALL_DEPTH or func in seen:
            return None
        sites = call_graph(ctx).callers(func)
        if not self._runs_in_training_loop(func, 0) or (
            not via and not function_trains(self.ctx, func) and not _stores_on_self(ctx, node)
        ):
            return None  # e.g. an evaluation helper that builds a model to load a checkpoint into
        handed_back = None
        lazy = lasting_first_use_guard(ctx, node, func)
        if lazy is not None:
            if outlives_call(ctx, func, lazy[1]):
                return None  # `if self.criterion is None: self.criterion = ...`: filled on the first call only
            if returns_holder(func, lazy[1]):
                handed_back = lazy[1]  # `def get(opt): if opt is None: opt = Adam(...)` ... `return opt`
        for site in sites:
            if not runs_when_called(ctx, site, func, node):
                continue  # built under a branch this call does not take (`if optimizer is None:`)
            if handed_back is not None and self._kept_by_caller(site, func, handed_back):
                continue  # `opt = get(opt, ...)` in the loop: the call builds it on the first pass only
            found = self._search(site, role, (site,) + via, depth + 1, seen | {func})
            if found is not None:
                return found
        return None

    def _built_once_in(self, node, loop) -> bool:
        """``node`` runs under a first-use guard inside ``loop`` (``if self.crit is None:
        self.crit = Loss()``, with an ``else`` too) and nothing in the loop empties that holder again."""
        return lasting_first_use_guard(self.ctx, node, loop) is not None

    def _kept_by_caller(self, site: ast.Call, func, param: str) -> bool:
        """``site`` hands back what it was given for ``param`` into the same holder (``opt =
        get_optimizer(opt, ...)``), and no loop around it empties that holder again."""
        given = argument_for(site, func, param)
        parent = self.ctx.parent(site)
        if given is None or not isinstance(parent, ast.Assign) or len(parent.targets) != 1:
            return False
        holder = ast.unparse(given)
        if ast.unparse(parent.targets[0]) != holder:
            return False
        return not any(resets(loop, holder) for loop in self.ctx.enclosing_loops(site))

    def _runs_in_training_loop(self, func, depth: int) -> bool:
        """Whether some chain of local calls (at most MAX_CALL_DEPTH long) runs ``func`` inside a training loop."""
        key = (func, depth)
        if key not in self._reach_cache:
            self._reach_cache[key] = False  # guards recursion
            ctx = self.ctx
            result = False
            for site in call_graph(ctx).callers(func):
                if any(self._trains(loop) for loop in ctx.enclosing_loops(site)):
                    result = True
                    break
                caller = ctx.enclosing_function(site)
                if (
                    caller is not None
                    and depth + 1 < self.MAX_CALL_DEPTH
                    and self._runs_in_training_loop(caller, depth + 1)
                ):
                    result = True
                    break
            self._reach_cache[key] = result
        return self._reach_cache[key]

    def _loaded_after(self, call: ast.AST, loop) -> bool:
        """The object built by ``call`` gets ``.load_state_dict(...)`` later in the same iteration."""
        flow = dataflow(self.ctx)
        return any(
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "load_state_dict"
            and node.lineno >= call.lineno
            and call in flow.origins(node.func.value)
            for node in ast.walk(loop)
        )

    def _optimizes_fresh_copy(self, call: ast.Call, loop) -> bool:
        """The optimizer's parameters are bound earlier in the same iteration: a model copy
        (`learner = copy.deepcopy(model)`, `probe = nn.Linear(...)`, `fast = maml.clone()`) or a
        tensor optimised directly (`delta = torch.zeros_like(x, requires_grad=True)`; `SGD([delta])`)."""
        if not isinstance(call, ast.Call):
            return False
        model_roots, tensor_roots = set(), set()
        for arg in list(call.args[:1]) + [k.value for k in call.keywords if k.arg == "params"]:
            for sub in ast.walk(arg):
                if (
                    isinstance(sub, ast.Call)
                    and isinstance(sub.func, ast.Attribute)
                    and sub.func.attr in ("parameters", "named_parameters")
                ):
                    root = sub.func.value
                    while isinstance(root, ast.Attribute):
                        root = root.value
                    if isinstance(root, ast.Name):
                        model_roots.add(root.id)
            if isinstance(arg, (ast.List, ast.Tuple)):
                tensor_roots |= {elt.id for elt in arg.elts if isinstance(elt, ast.Name)}
        if not model_roots and not tensor_roots:
            return False
        # The assignments of those names that reach the optimizer, made in this iteration.
        flow = dataflow(self.ctx)
        for name in tensor_roots | model_roots:
            for binding in flow.reaching(name, call):
                if binding.kind != "assign" or not self.ctx.is_inside(binding.stmt, loop):
                    continue
                if name in tensor_roots:
                    return True
                if isinstance(binding.value, ast.Call) and self.built.is_fresh_model(binding.value):
                    return True
        return False

    def _conditional_in(self, node, loop) -> bool:
        loop_names = _target_names(loop)
        for ancestor in self.ctx.ancestors(node):
            if ancestor is loop:
                return False
            if isinstance(ancestor, ast.If):
                if not ancestor.orelse or loop_names & name_ids(ancestor.test):
                    return True
            elif isinstance(ancestor, (ast.IfExp, ast.BoolOp)):
                return True  # `SGD(...) if epoch == 0 else optimizer`, `optimizer or SGD(...)`
        return False

    # ----- the verdict ------------------------------------------------------------------------------
    def judge(self, loop, role: str) -> tuple[str, str]:
        """(CONTINUING or INDEPENDENT, reason) for an object of ``role`` built in ``loop``'s iteration."""
        kind = loop_name_kind(loop)
        if kind == "run":
            return INDEPENDENT, "named"
        optimizers = [c for c, r in self.built.constructions() if r == Role.OPTIMIZER]
        if optimizes_new_tensors(self.ctx, loop, optimizers):
            # `for i in range(n): x = Variable(img, requires_grad=True); opt = SGD([x])`: the
            # optimizer's tensors are the iteration's own, there is no optimizer to build before it.
            return INDEPENDENT, "fresh-tensors"
        depths = self.step_depths(loop)
        if kind == "epoch" or (kind == "step" and not self._holds_whole_fresh_runs(loop, optimizers, depths)):
            return CONTINUING, kind
        fresh = builds_fresh_run(self.ctx, loop, optimizers, trains_handed_out=bool(depths) and min(depths) >= 1)
        if self._inside_epoch_loop(loop) and not (fresh and self._runs_whole_in_iteration(loop)):
            # `for epoch ...: for shard_id ...:` -- a loop repeated every epoch is part of one run,
            # unless each iteration trains models of its own and nothing it trains outlives it
            # and reads the result (`for which_iter in (0, 1): for case in cases: net = Net(); ...;
            # check(net)`).
            return CONTINUING, "epoch"
        if fresh:
            # `for case in cases: net = Net(**case); opt = SGD(net.parameters())`, `for net in ensemble:
            # train(net)`: each iteration trains its own model, nothing carries over to the next.
            return INDEPENDENT, "fresh-run"
        if _over_literal_settings(loop):
            # `for device in ["cpu", "cuda"]:`, `for lr in (0.1, 0.01):` -- a sweep over settings
            # written out in the code, not data or time: each value gets a run of its own.
            return INDEPENDENT, "settings"
        if depths and min(depths) >= 2:
            return INDEPENDENT, "whole-runs"
        if depths == {0}:
            return CONTINUING, "step"
        # An epoch-like loop with neutral names: follow the data.
        other = Role.MODEL if role == Role.OPTIMIZER else Role.OPTIMIZER
        if self.built.rebuilds(loop, other):
            return INDEPENDENT, "fresh-run"
        return CONTINUING, "keeps-model" if role == Role.OPTIMIZER else "keeps-optimizer"

    def _holds_whole_fresh_runs(self, loop, optimizers: list[ast.Call], depths: set[int]) -> bool:
        """A loop named for steps or iterations (``for i in range(iter_num)``) whose iteration runs its
        optimizer steps two loops down (epochs of batches), with an optimizer over a model built
        fresh in that iteration (``main(opt, i)`` builds the model, then its optimizer): a step
        holds no loop of steps, so the name is read as a count of repeats and the data decides. A
        loop named for epochs keeps its name: an epoch may hold phases of batches. A function of
        another file handed the fresh model (``for n_iters in ...: main(Net(n_iters), ...)``)
        that builds its optimizer and steps it two loops down counts the same."""
        if bool(depths) and min(depths) >= 2 and builds_fresh_run(self.ctx, loop, optimizers, trains_handed_out=False):
            return True
        # The same, with the fresh model handed to a function of another file that builds its own
        # optimizer over it and steps it two loops down (``main(model, params)``): its steps
        # reach this file as events at the call, with no loops around them.
        return hands_own_model_to_run(self.ctx, loop, trains_handed_out=False, min_loops=2)

    def _runs_whole_in_iteration(self, loop) -> bool:
        """``loop``'s iteration trains, then reads what it trained, and nothing of it outlives the
        iteration: the training ends where the last optimizer step, or the inner loop around it,
        ends."""
        events = iterations(self.ctx).iteration_events(loop)
        ends = [end_position(e.loops[0] if e.loops else e.site) for e in events if e.kind in STEP_KINDS]
        return bool(ends) and trained_state_used_up_in_iteration(self.ctx, loop, max(ends))

    def _inside_epoch_loop(self, loop) -> bool:
        """An enclosing loop of ``loop`` (in its function) named for epochs or steps, with no loop
        named for whole runs in between."""
        for outer in self.ctx.enclosing_loops(loop):
            if outer is loop:
                continue
            kind = loop_name_kind(outer)
            if kind == "run":
                return False
            if kind in ("epoch", "step"):
                return True
        return False

    def step_depths(self, loop) -> set[int]:
        """How many loops down, inside one iteration of ``loop``, its optimizer steps run."""
        events = iterations(self.ctx).iteration_events(loop)
        depths = {len(e.loops) for e in events if e.kind in STEP_KINDS}
        return depths or {len(e.loops) for e in events if e.kind is EventKind.BACKWARD}


# ----- loop names ------------------------------------------------------------------------------------
def loop_name_kind(loop) -> str | None:
    """ "epoch", "step", "run" or None, from the loop variable first, then the iterable."""
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        kind = _kind_of(_tokens(loop.target, namespaces=True))
        if kind:
            return kind
        return _kind_of(_tokens(loop.iter, namespaces=False))
    return _kind_of(_tokens(loop.test, namespaces=False))


def _kind_of(tokens: set[str]) -> str | None:
    # A run-level name wins over an epoch-level one: when in doubt, stay silent.
    if tokens & RUN_TOKENS:
        return "run"
    if tokens & EPOCH_TOKENS:
        return "epoch"
    if tokens & STEP_TOKENS:
        return "step"
    return None


def _tokens(expr: ast.AST, namespaces: bool) -> set[str]:
    """Lower-case words of the names in ``expr``: plain names and the last attribute of a chain."""
    words: set[str] = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name):
            words.update(_split(node.id))
        elif isinstance(node, ast.Attribute):
            words.update(_split(node.attr))
            inner = node.value
            while isinstance(inner, ast.Attribute):  # skip the namespace part of `self.cfg.epochs`
                inner = inner.value
            if not isinstance(inner, ast.Name):
                stack.append(inner)
        else:
            stack.extend(ast.iter_child_nodes(node))
    if not namespaces:
        words -= _NAMESPACE_TOKENS
    return words


def _split(name: str) -> list[str]:
    return [w for w in re.split(r"[_\d]+", name.lower()) if w]


def _over_literal_settings(loop) -> bool:
    """``for x in [c1, c2, ...]`` over a literal list, tuple or set of constants (or of literal
    tuples of constants: ``for lr, wd in [(0.1, 0), (0.01, 5e-4)]``)."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)) or not isinstance(loop.iter, (ast.List, ast.Tuple, ast.Set)):
        return False
    elts = loop.iter.elts
    return bool(elts) and all(_is_constant(e) for e in elts)


def _is_constant(expr: ast.AST) -> bool:
    if isinstance(expr, (ast.Tuple, ast.List)):
        return all(_is_constant(e) for e in expr.elts)
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        expr = expr.operand
    return isinstance(expr, ast.Constant)


def _target_names(loop) -> set[str]:
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        return name_ids(loop.target)
    return set()


def _stores_on_self(ctx, call: ast.AST) -> bool:
    """`self.optimizer = SGD(...)` in a setup method: the object outlives the call."""
    parent = ctx.parent(call)
    if not isinstance(parent, ast.Assign):
        return False
    for target in parent.targets:
        root = target
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(target, ast.Attribute) and isinstance(root, ast.Name) and root.id == "self":
            return True
    return False


def _factory_role(function: Definition) -> str | None:
    """Role.MODEL or Role.OPTIMIZER when ``function`` is a factory of its file (``Constructions.factories``)."""
    return run_analysis(function.ctx).built.factories.get(function.node)


def run_analysis(ctx: FileContext) -> RunAnalysis:
    return ctx.shared("runs", lambda: RunAnalysis(ctx))


def describe_loop(ctx: FileContext, loop) -> str:
    """``the loop at line 12 (`for epoch in range(args.epochs)`)`` for messages."""
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        header = f"for {ast.unparse(loop.target)} in {ast.unparse(loop.iter)}"
    else:
        header = f"while {ast.unparse(loop.test)}"
    if len(header) > 60:
        header = header[:57] + "..."
    return f"the loop at line {loop.lineno} (`{header}`)"


__all__ = [
    "Constructions",
    "RunAnalysis",
    "RebuiltInLoop",
    "run_analysis",
    "loop_name_kind",
    "CONTINUING",
    "INDEPENDENT",
]
