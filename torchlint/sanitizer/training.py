"""Runtime checks of the training step itself (TS106-TS112).

Each is the runtime twin of a static rule and costs almost nothing on a
correct run: one ``post_accumulate_grad`` hook per trainable parameter (a few
attribute reads per backward pass), a loop over the optimizer's parameters and
one fused gradient norm (one host sync) per optimizer step, and an attribute
read per root-model call.  Anything heavier runs only once something already
looks wrong.

=====  ======================  ==============================================
TS106  grads-not-cleared       step with gradients left over from before the
                               previous step (twin of TL001)
TS107  param-not-in-optimizer  parameters get gradients but no optimizer holds
                               them
TS108  param-never-updated     optimizer parameters that never get a gradient
                               in the first ``update_window`` steps
TS109  training-in-eval-mode   step on a model in eval mode that has Dropout /
                               BatchNorm layers (twin of TL007)
TS110  eval-forward-with-grad  eval-mode forward with autograd on whose graph
                               no backward uses (twin of TL006)
TS111  nonfinite-grad          NaN/Inf gradients at the step, or a total norm
                               ``grad_explosion_factor`` x its running median
TS112  optimizer-not-stepped   ``stall_backwards`` backward passes fill an
                               optimizer's gradients, which get cleared unused
                               (5x as many if they only pile up), and it never
                               steps
=====  ======================  ==============================================
"""

from __future__ import annotations

import gc
import math

import torch

from .check import TrainingStepCheck
from .findings import CHECK_NAMES, Location
from .hooks import closure_of
from .locations import frame_locals, name_in_frame, user_frame
from .tensors import iter_tensors
from .training_eval import EvalGraphTracker
from .training_norms import GradNormMonitor
from .training_params import (
    ParamRegistry,
    ParamState,
    RootModel,
    guess_module_path,
    parameter_names_in_frame,
)
from .values import can_be_nonfinite, finite_sum, host_values, readable, real_values

#: Parameter names listed in one message before "and N more".
_MAX_NAMES = 6
#: TS112: gradients that pile up without ever being cleared are reported only
#: after this many times ``stall_backwards`` passes (deliberate accumulation).
ACCUMULATION_FACTOR = 5
#: How often one session may scan the heap for optimizers that never stepped.
_MAX_DISCOVERIES = 3
#: Backward lines whose frame is searched for optimizer names.
_MAX_NAMING_FRAMES = 8
#: TS112 at exit: backward passes that filled an optimizer's gradients while it never stepped.
_MIN_BACKWARDS_AT_EXIT = 2


def _listing(names: list[str]) -> str:
    shown = ", ".join(names[:_MAX_NAMES])
    if len(names) > _MAX_NAMES:
        shown += f" and {len(names) - _MAX_NAMES} more"
    return shown


def _plural(n: int, word: str) -> str:
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word}{'es' if word.endswith('s') else 's'}"


def _any_nonfinite(tensors: list[torch.Tensor]) -> bool:
    """Whether any tensor holds NaN/Inf (one reduction each, one sync; asked on the NaN path only)."""
    sums = [finite_sum(values) for t in tensors if can_be_nonfinite(t) and (values := readable(t)) is not None]
    return not all(map(math.isfinite, host_values(sums)))


def _grad_scaler_in_use() -> bool:
    """Whether an enabled GradScaler has scaled a loss (a heap scan: only
    called when a finding is about to be reported).  Which optimizer it drives
    is not recorded past ``scaler.update()``."""
    scaler_type = getattr(torch.amp, "GradScaler", None) or torch.cuda.amp.GradScaler  # torch < 2.3
    for obj in gc.get_objects():
        if issubclass(type(obj), scaler_type):
            if getattr(obj, "_enabled", False) and getattr(obj, "_scale", None) is not None:
                return True
    return False


class OptimizerState:
    """What the training checks remember about one optimizer."""

    def __init__(self, optimizer: torch.optim.Optimizer, label: str):
        self.optimizer = optimizer
        self.label = label
        self.steps = 0
        self.first_location: Location | None = None
        self.in_step = False
        self.closure_step = False
        self.watching_values = False  # TS106 confirmation hooks installed
        self.stall_reported = False
        self.wrote_nonfinite = False  # a step with non-finite gradients was reported (TS111)
        self.max_period = 0  # most backward passes seen between two steps
        self.param_ids: frozenset[int] = frozenset()
        self.norms: GradNormMonitor | None = None
        self.closure_handle = None  # per-optimizer step pre-hook wrapping closures
        self.step_states: list | None = None  # parameter states of the step in progress
        self.roots: list = []  # root models it updates (TS109)
        self.states: list = []  # tracked parameter states, cached (see _param_states)
        self.untracked: list = []  # its parameters that cannot get a gradient (frozen)
        self.states_key: tuple = ()
        self.roots_key: tuple = ()

    def params(self) -> list[torch.Tensor]:
        return [p for group in self.optimizer.param_groups for p in group["params"]]

    def slot_name(self, param: torch.Tensor) -> str:
        """``opt.param_groups[0]['params'][2]``: a name for a parameter of no known model."""
        for g, group in enumerate(self.optimizer.param_groups):
            for i, p in enumerate(group["params"]):
                if p is param:
                    return f"{self.label}.param_groups[{g}]['params'][{i}]"
        return f"a parameter of {self.label}"


class TrainingChecks(TrainingStepCheck):
    """TS106-TS112 on the optimizer step, gradient accumulation and root models."""

    # Names come from the one public table of check codes.
    codes = {code: CHECK_NAMES[code] for code in ("TS106", "TS107", "TS108", "TS109", "TS110", "TS111", "TS112")}

    # -- lifecycle -------------------------------------------------------------
    def install(self) -> None:
        opts = self.options
        self.update_window = max(1, int(getattr(opts, "update_window", 3)))
        self.explosion_factor = float(getattr(opts, "grad_explosion_factor", 1e3))
        self.stall_backwards = max(1, int(getattr(opts, "stall_backwards", 20)))
        self.registry = ParamRegistry(self.stall_backwards, self._on_stall, self.session.is_current)
        self.eval_graphs = EvalGraphTracker(self._report_unused_graph)
        self.optimizers: dict[int, OptimizerState] = {}
        self.owners: dict[int, list[OptimizerState]] = {}  # id(param) -> optimizers
        self._seen_roots: dict[int, RootModel | None] = {}
        self._unoptimized_checked = False
        self._discoveries = 0
        self._orphans: set[int] = set()  # params no optimizer holds (checked by a scan)
        self._backward_location: Location | None = None
        self._named_at: set[Location] = set()  # backward lines whose frame was searched for optimizers

    def finish(self) -> None:
        self.eval_graphs.flush()
        if self.session.failed:
            return  # a crashed run stopped half-way: what it did not do yet is no finding
        if not self._unoptimized_checked and any(o.steps for o in self.optimizers.values()):
            self._check_unoptimized()
        self._check_never_stepped()

    def uninstall(self) -> None:
        for opt in self.optimizers.values():
            if opt.closure_handle is not None:
                opt.closure_handle.remove()
        self.registry.close()
        self.eval_graphs.close()
        self.optimizers.clear()
        self.owners.clear()
        self._seen_roots.clear()

    def on_backward(self, event) -> None:
        # Gradients of accelerator tensors are accumulated on the autograd
        # engine's device threads, whose stacks hold no user frame: remember
        # the user's backward line for findings raised from those hooks.
        self._backward_location = event.location
        if event.location not in self._named_at and len(self._named_at) < _MAX_NAMING_FRAMES:
            # Meet the optimizers the code around this backward holds, by their
            # names there: one that never steps is never seen by a step hook.
            self._named_at.add(event.location)
            frame = user_frame()
            scope = dict(frame_locals(frame)) if frame is not None else {}
            owner = scope.pop("self", None)
            if owner is not None:
                scope.update({f"self.{k}": v for k, v in getattr(owner, "__dict__", {}).items()})
            for name, value in scope.items():
                if isinstance(value, torch.optim.Optimizer) and id(value) not in self.optimizers:
                    # Known from now on, also if it never steps and is gone by the session's end.
                    opt = self.optimizers[id(value)] = OptimizerState(value, name)
                    self._index_owner(opt, opt.params())

    # -- root models -------------------------------------------------------------
    def on_root_post(self, module, args, kwargs, output) -> None:
        root = self._seen_roots.get(id(module), False)
        if root is False:
            root = self._add_root(module)
        if root is None or not torch.is_grad_enabled():
            return
        eval_mode = not module.training
        root.last_grad_forward_eval = eval_mode
        # Backward passes through an evaluation forward (eval mode, or inputs that
        # require grad: adversarial attacks, saliency maps) are not training steps.
        root.evaluating = eval_mode or any(t.requires_grad and t.is_leaf for _, t in iter_tensors(args))
        if eval_mode:
            self.eval_graphs.flush()
            self.eval_graphs.watch(root.name, output, self.session.user_location())

    def _add_root(self, module) -> RootModel | None:
        # Loss modules and other parameter-free callables are not models.
        if next(module.parameters(), None) is None:
            self._seen_roots[id(module)] = None
            return None
        name = self.session.module_name(module)
        if name == type(module).__name__:  # no variable holds it: a submodule called directly?
            name = guess_module_path(module, user_frame()) or name
        root = self.registry.add_root(module, name)
        self._seen_roots[id(module)] = root
        return root

    def _report_unused_graph(self, model: str, location: Location) -> None:
        self.emit(
            "TS110",
            f"`{model}` ran a forward pass in eval mode with autograd enabled, but no backward pass "
            f"used its graph: the graph and its saved activations were kept for nothing. Wrap "
            f"evaluation in `with torch.no_grad():` (or `torch.inference_mode()`). "
            f"Static twin: TL006.",
            {"model": model, "twin": "TL006"},
            location,
        )

    # -- optimizer step ------------------------------------------------------------
    def _optimizer_state(self, optimizer) -> OptimizerState:
        state = self.optimizers.get(id(optimizer))
        if state is None or state.optimizer is not optimizer:
            label = name_in_frame(optimizer, user_frame()) or type(optimizer).__name__
            state = self.optimizers[id(optimizer)] = OptimizerState(optimizer, label)
        return state

    def _param_states(self, opt: OptimizerState, params: list[torch.Tensor]) -> list[ParamState]:
        """States of the optimizer's trainable parameters; starts tracking new ones.
        Cached per optimizer: rebuilt when its parameters or the tracked set
        change, or when one of its frozen parameters is unfrozen."""
        registry = self.registry
        key = (len(params), id(params[0]) if params else 0, len(registry.params))
        if opt.states_key == key and not any(p.requires_grad for p in opt.untracked):
            return opt.states
        known = registry.params
        states, untracked = [], []
        frame_names = None
        for p in params:
            state = known.get(id(p))
            if state is None and p.requires_grad:
                if frame_names is None:  # once per call, only for parameters not seen yet
                    frame_names = parameter_names_in_frame(user_frame())
                name = frame_names.get(id(p))
                state = registry.track(p, name or opt.slot_name(p), provisional=name is None)
            if state is not None:
                states.append(state)
            else:
                untracked.append(p)
        if len(opt.param_ids) != len(params):
            self._index_owner(opt, params)
        opt.states, opt.untracked = states, untracked
        opt.states_key = (len(params), id(params[0]) if params else 0, len(registry.params))
        return states

    def _index_owner(self, opt: OptimizerState, params: list[torch.Tensor]) -> None:
        opt.param_ids = frozenset(id(p) for p in params)
        for pid in opt.param_ids:
            owners = self.owners.setdefault(pid, [])
            if opt not in owners:
                owners.append(opt)
            self._orphans.discard(pid)

    def on_optimizer_pre_step(self, optimizer, args, kwargs):
        opt = self._optimizer_state(optimizer)
        self.eval_graphs.flush()
        if opt.steps == 0 and opt.first_location is None:
            opt.first_location = self.session.user_location()
        elif opt.steps >= 1 and not self._unoptimized_checked:
            # An optimizer steps for the second time: every optimizer of the
            # training loop has stepped once, so all of them are known.
            self._check_unoptimized()
        opt.in_step = True
        params = opt.params()
        states = opt.step_states = self._param_states(opt, params)
        self._check_eval_mode(opt, states)
        opt.closure_step = closure_of(args, kwargs)[0] is not None
        if not opt.closure_step:
            self._check_gradients(opt, states)
        if opt.closure_step and opt.closure_handle is None:
            # Global pre-hooks cannot replace the arguments; a per-optimizer
            # one can (it runs right after this one, also on this first step).
            opt.closure_handle = optimizer.register_step_pre_hook(self._wrap_closure)

    def _wrap_closure(self, optimizer, args, kwargs):
        """A closure recomputes the gradients (LBFGS may call it many times per
        step): they are judged after the step, and every call counts as a fresh
        accumulation round, so that a closure that forgets zero_grad() shows."""
        closure, where = closure_of(args, kwargs)
        opt = self.optimizers.get(id(optimizer))
        if closure is None or opt is None:
            return None
        registry = self.registry

        def closure_round():
            for p in opt.params():
                state = registry.params.get(id(p))
                if state is not None:
                    state.step_since_grad = True
                    state.remember_grad()
            return closure()

        if where == "closure":
            return args, {**kwargs, "closure": closure_round}
        return (args[0], closure_round, *args[2:]), kwargs

    def on_optimizer_post_step(self, optimizer, args, kwargs) -> None:
        opt = self._optimizer_state(optimizer)
        states = opt.step_states
        if states is None:  # no pre-step call seen (hooks installed mid-step)
            states = self._param_states(opt, opt.params())
        opt.step_states = None
        if opt.closure_step:
            self._check_gradients(opt, states)
        period = 0
        for state in states:
            if state.backwards_since_step > period:
                period = state.backwards_since_step
            state.backwards_since_step = 0
            state.discards = 0
            state.step_since_grad = True
            state.remember_grad()
        if not opt.closure_step and period > opt.max_period:
            opt.max_period = period
        opt.steps += 1
        opt.in_step = False
        opt.closure_step = False
        opt.stall_reported = False
        if opt.steps == self.update_window:
            self._check_never_updated(opt, states)

    # -- TS106 / TS111: the gradients the step is about to use ------------------------
    def _check_gradients(self, opt: OptimizerState, states: list[ParamState]) -> None:
        self._check_stale(opt, states)
        # Gradients without readable values (a dry run on the meta device) are not judged.
        with_grad, grads = [], []
        for state in states:
            grad = state.param.grad
            values = None if grad is None else real_values(grad)
            if values is not None:
                with_grad.append(state)
                grads.append(values)
        if not grads:
            return
        if opt.norms is None:
            opt.norms = GradNormMonitor(self.explosion_factor)
        result = opt.norms.check(grads)
        if result is None:
            return
        names = [s.name for s in with_grad]
        step = f"{opt.label}.step()"
        if (result.nan or result.inf) and opt.wrote_nonfinite and _any_nonfinite([s.param for s in with_grad]):
            return  # the weights are NaN since the update TS111 reported: a consequence, not a new event
        if result.nan or result.inf:
            opt.wrote_nonfinite = True
            bad = [names[i] for i in result.nan] + [names[i] for i in result.inf if i not in result.nan]
            kinds = " and ".join(k for k, idx in (("NaN", result.nan), ("Inf", result.inf)) if idx)
            self.emit(
                "TS111",
                f"{step} got {kinds} gradients in {_plural(len(bad), 'parameter')}: {_listing(bad)}. "
                f"The update would write {kinds} into the weights. TS101 (anomaly mode) pins the op whose "
                f"backward makes them when they come back, sanitize(anomaly='full') on their first "
                f"occurrence; TS104 reports non-finite inputs. Check for log(0), division by zero or a "
                f"too-high learning rate.",
                {"optimizer": opt.label, "nan": [names[i] for i in result.nan], "inf": [names[i] for i in result.inf]},
            )
        else:
            self.emit(
                "TS111",
                f"{step}: the total gradient norm jumped to {result.total:.3g}, "
                f"{result.total / result.baseline:.3g}x its running median {result.baseline:.3g}: "
                f"the gradients are exploding. Clip them (torch.nn.utils.clip_grad_norm_) before the "
                f"step, lower the learning rate, or check this batch.",
                {
                    "optimizer": opt.label,
                    "total_norm": result.total,
                    "median_norm": result.baseline,
                    "factor": self.explosion_factor,
                },
            )

    def _check_stale(self, opt: OptimizerState, states: list[ParamState]) -> None:
        dirty = [s for s in states if s.dirty]
        if not dirty:
            return
        if not opt.watching_values:
            # First suspicion (from version counters): confirm by value from the
            # next step on, in case .grad was cleared through .grad.data.
            for state in states:
                self.registry.watch_values(state)
            opt.watching_values = True
            return
        evidence = [s for s in dirty if s.evidence is not None]
        if not evidence:
            return
        nonzero = host_values([s.evidence for s in evidence])
        stale = [s.name for s, flag in zip(evidence, nonzero) if flag]
        if not stale:
            return
        if opt.closure_step:
            self.emit(
                "TS106",
                f"the closure passed to {opt.label}.step() does not clear the gradients "
                f"({_plural(len(stale), 'parameter')}: {_listing(stale)}): each call adds its backward pass "
                f"to the previous ones (LBFGS calls it several times per step). Call {opt.label}.zero_grad() "
                f"at the start of the closure. Static twin: TL001.",
                {"optimizer": opt.label, "parameters": stale, "twin": "TL001", "closure": True},
            )
            return
        self.emit(
            "TS106",
            f"{opt.label}.step() uses gradients that still hold contributions from backward passes made "
            f"before its previous step ({_plural(len(stale), 'parameter')}: {_listing(stale)}): they are "
            f"never cleared, so every update adds up all past gradients. Call {opt.label}.zero_grad() "
            f"once per step, after {opt.label}.step() or before loss.backward() (when accumulating "
            f"gradients, after the step that consumes them). Static twin: TL001.",
            {"optimizer": opt.label, "parameters": stale, "twin": "TL001"},
        )

    # -- TS107 / TS108 -----------------------------------------------------------------
    def _unheld_parameters(self) -> dict:
        """Per root model, the parameters that got gradients but no known optimizer holds."""
        found = {}
        for root in self.registry.roots.values():
            missing = []
            for name, p in root.module.named_parameters():
                if id(p) in self.owners or readable(p) is None:
                    continue  # held by an optimizer, or no data to train (a dry run on the meta device)
                # Frozen parameters never get a .grad; one frozen just now (a GAN
                # freezes D while G trains) may have one and still count.
                state = self.registry.params.get(id(p))
                if (state is not None and state.touched) or p.grad is not None:
                    missing.append(root.qualify(name))
            if missing:
                found[id(root)] = (root, missing)
        return found

    def _check_unoptimized(self) -> None:
        self._unoptimized_checked = True
        firsts = [o.first_location for o in self.optimizers.values() if o.first_location is not None]
        location = firsts[0] if firsts else None
        unheld = self._unheld_parameters()
        if unheld and self._discover_optimizers():
            # An optimizer that has not stepped yet (a discriminator stepping every
            # 4th iteration) holds them: they are not orphans.
            unheld = self._unheld_parameters()
        for root, missing in unheld.values():
            if missing:
                labels = ", ".join(o.label for o in self.optimizers.values())
                self.emit(
                    "TS107",
                    f"{_plural(len(missing), 'parameter')} of `{root.name}` receive gradients but belong to "
                    f"no optimizer ({labels}), so they are never updated: {_listing(missing)}. Pass them to "
                    f"an optimizer (e.g. `{root.name}.parameters()`), or freeze them with "
                    f"requires_grad_(False) so that no gradient is computed for them.",
                    {"model": root.name, "parameters": missing},
                    location,
                )

    def _check_never_updated(self, opt: OptimizerState, states: list[ParamState]) -> None:
        missing = [s.name for s in states if s.param.requires_grad and not s.touched and s.param.grad is None]
        if not missing:
            return
        self.emit(
            "TS108",
            f"{_plural(len(missing), 'parameter')} held by {opt.label} require grad but got no gradient "
            f"in its first {_plural(self.update_window, 'step')}: {_listing(missing)}. The layers are "
            f"unused by the forward pass, or their output is detached (.detach(), .item(), .numpy(), "
            f"torch.no_grad()); if they are meant to be frozen, call requires_grad_(False) on them.",
            {"optimizer": opt.label, "parameters": missing, "steps": self.update_window},
        )

    # -- TS109 -----------------------------------------------------------------------------
    def _roots_of(self, opt: OptimizerState, states: list[ParamState]) -> list[RootModel]:
        """The root models whose parameters ``opt`` updates (cached until its
        parameters or the known models change)."""
        key = (len(states), len(self.registry.roots))
        if opt.roots_key != key:
            root_of = self.registry.root_of
            found = {}
            for state in states:
                root = root_of.get(id(state.param))
                if root is not None:
                    found[id(root)] = root
            opt.roots, opt.roots_key = list(found.values()), key
        return opt.roots

    def _check_eval_mode(self, opt: OptimizerState, states: list[ParamState]) -> None:
        for root in self._roots_of(opt, states):
            if root.mode_layers and not root.module.training and root.last_grad_forward_eval:
                layers = _listing([root.qualify(n) for n in root.mode_layers])
                self.emit(
                    "TS109",
                    f"{opt.label}.step() trains `{root.name}` while it is in eval mode: its Dropout/BatchNorm "
                    f"layers ({layers}) behave as at inference (no dropout, frozen running statistics). Call "
                    f"{root.name}.train() before the training forward pass (e.g. after each validation). "
                    f"Static twin: TL007.",
                    {"model": root.name, "layers": root.mode_layers, "twin": "TL007"},
                )

    # -- TS112 -----------------------------------------------------------------------------
    def _on_stall(self, state: ParamState) -> None:
        """Runs inside backward, when a parameter has received ``stall_backwards``
        (or a multiple) gradients since an optimizer holding it last stepped.

        Gradients that were cleared although no step used them (zero_grad()
        outside the condition that guards the step, or a GradScaler skipping
        every step) are reported after ``stall_backwards`` passes.  Gradients
        that only pile up look like deliberate accumulation until
        ``ACCUMULATION_FACTOR`` times as many passes (nanoGPT accumulates 40)."""
        n = state.backwards_since_step
        limit = self.stall_backwards if state.discards else ACCUMULATION_FACTOR * self.stall_backwards
        if n < limit or readable(state.param) is None:
            return  # not yet, or a parameter without data (meta, fake) that no step could train
        pid = id(state.param)
        owners = self.owners.get(pid)
        if not owners:
            if pid in self._orphans or not self._discover_optimizers():
                self._orphans.add(pid)
                return
            owners = self.owners.get(pid)
            if not owners:
                self._orphans.add(pid)
                return
        for opt in owners:
            if opt.in_step or opt.stall_reported:
                continue
            if opt.steps and n < 3 * opt.max_period:
                continue  # it used to step, just not that often
            opt.stall_reported = True
            self._report_stall(opt, n, discarded=state.discards > 0)

    def _check_never_stepped(self) -> None:
        """At exit: optimizers whose parameters backward passes filled during the whole
        block, and that never stepped once (also in runs shorter than ``stall_backwards``)."""
        waiting = [
            s
            for s in self.registry.params.values()
            if s.backwards_since_step >= _MIN_BACKWARDS_AT_EXIT and readable(s.param) is not None
        ]
        if not waiting:
            return
        if any(not self.owners.get(id(s.param)) for s in waiting):
            self._discover_optimizers()
        reported = set()
        for state in waiting:
            for opt in self.owners.get(id(state.param), ()):
                if opt.steps == 0 and not opt.stall_reported and id(opt) not in reported:
                    reported.add(id(opt))
                    opt.stall_reported = True
                    self._report_stall(opt, state.backwards_since_step, state.discards > 0, at_exit=True)

    def _discover_optimizers(self) -> bool:
        """Find optimizers that never stepped (so no hook saw them): one heap scan."""
        if self._discoveries >= _MAX_DISCOVERIES:
            return False
        self._discoveries += 1
        found = False
        optimizer_type = torch.optim.Optimizer
        for obj in gc.get_objects():
            # type(), not isinstance(): the latter can run lazy-module __class__ properties.
            if issubclass(type(obj), optimizer_type) and id(obj) not in self.optimizers:
                label = type(obj).__name__
                opt = self.optimizers[id(obj)] = OptimizerState(obj, label)
                self._index_owner(opt, opt.params())
                found = True
        return found

    def _report_stall(self, opt: OptimizerState, n: int, discarded: bool, at_exit: bool = False) -> None:
        if opt.steps == 0:
            # Found by the heap scan: name it as the code around this backward does.
            opt.label = name_in_frame(opt.optimizer, user_frame()) or opt.label
        grads = [values for p in opt.params() if p.grad is not None and (values := readable(p.grad)) is not None]
        nonfinite = not all(host_values([torch.isfinite(g).all() for g in grads]))
        step = f"{opt.label}.step()"
        since = "never ran" if opt.steps == 0 else "did not run in between"
        if at_exit:
            since += " during the whole sanitize() block"
        what = f"{_plural(n, 'backward pass')} filled the gradients of {opt.label}'s parameters, but {step} {since}"
        if discarded:
            what += " (the gradients were cleared without being used)"
        if nonfinite and _grad_scaler_in_use():
            return  # a GradScaler skipping every step: TS113 (loss-scale-collapse) reports that
        scaled = False
        if nonfinite:
            why = (
                "Its gradients also contain Inf/NaN. Check the condition around the step, and find the "
                "source of the non-finite values (TS101, TS104)."
            )
        else:
            why = (
                "Check the condition around the step (e.g. an accumulation counter that never reaches "
                "its target), or that the step is called at all."
            )
        self.emit(
            "TS112",
            f"{what}. {why}",
            {
                "optimizer": opt.label,
                "backward_passes": n,
                "steps": opt.steps,
                "nonfinite_grads": nonfinite,
                "grad_scaler": scaled,
                "at_exit": at_exit,
            },
            self._backward_location,
        )
