"""Per-parameter bookkeeping for the training checks (TS106-TS112).

Every trainable parameter the sanitizer meets (in a root model's first
forward pass, or in an optimizer's first step) gets one
``post_accumulate_grad`` hook.  That hook runs once per backward pass per
parameter, only when a gradient is really accumulated into ``.grad``, and does
a handful of attribute reads; all the decisions are taken later, once per
optimizer step.

How "was the gradient cleared?" is answered without looking at its values:
AccumulateGrad adds a new gradient *in place* into an existing ``.grad``,
which bumps the tensor's version counter by exactly one.  So if, right after
an accumulation, ``.grad`` is the very same tensor we saw after the previous
accumulation and its version moved by exactly one, nothing touched it in
between: it was not set to None (that makes a new tensor) and not zeroed
(``zero_()`` is one more version bump).  Writes through ``.grad.data`` bypass
the version counter, so a suspicion raised that way is confirmed by value,
lazily and only for the parameters already under suspicion (see
:meth:`ParamRegistry.watch_values`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import torch
from torch import nn

from .locations import frame_locals, name_in_frame, user_frame
from .values import readable


def mode_dependent_layers(model: nn.Module) -> list[str]:
    """Qualified names of the layers inside ``model`` that compute differently in
    train() and eval(): dropout with p > 0, batch/instance norm that keeps running
    statistics (without them it normalises with batch statistics in both modes)."""
    names = []
    for name, module in model.named_modules():
        if (
            isinstance(module, nn.modules.dropout._DropoutNd)
            and module.p > 0
            or isinstance(module, (nn.modules.batchnorm._BatchNorm, nn.modules.instancenorm._InstanceNorm))
            and module.track_running_stats
            or isinstance(module, nn.MultiheadAttention)
            and module.dropout > 0
        ):
            names.append(name)
    return names


def guess_module_path(module: nn.Module, frame, max_frames: int = 8) -> str | None:
    """``model.encoder`` for a submodule called directly by user code: a
    variable of a user frame (or an attribute of its ``self``) whose module
    tree contains ``module``."""
    depth = 0
    while frame is not None and depth < max_frames:
        local_names = frame_locals(frame)
        candidates = list(local_names.items())
        owner = local_names.get("self")
        if isinstance(owner, nn.Module):
            candidates.append(("self", owner))
        for name, value in candidates:
            if isinstance(value, nn.Module) and value is not module:
                for path, sub in value.named_modules():
                    if sub is module:
                        return f"{name}.{path}"
        frame = user_frame(frame.f_back)
        depth += 1
    return None


def parameter_names_in_frame(frame) -> dict[int, str]:
    """``id(param) -> "model.aux.weight"`` for the models held by the variables
    of a user frame (and its ``self``): names for parameters of a model whose
    forward never ran as a whole."""
    names: dict[int, str] = {}
    if frame is None:
        return names
    local_names = frame_locals(frame)
    candidates = list(local_names.items())
    owner = local_names.get("self")
    if isinstance(owner, nn.Module):
        candidates.append(("self", owner))
    for var, value in candidates:
        if isinstance(value, nn.Module):
            for pname, p in value.named_parameters():
                names.setdefault(id(p), f"{var}.{pname}")
    return names


class RootModel:
    """A model called from user code (not from inside another module)."""

    __slots__ = ("module", "name", "mode_layers", "last_grad_forward_eval", "evaluating", "__weakref__")

    def __init__(self, module: nn.Module, name: str):
        self.module = module
        self.name = name
        self.mode_layers = mode_dependent_layers(module)
        #: Whether the latest forward pass with autograd on ran in eval mode.
        self.last_grad_forward_eval = False
        #: Whether that forward pass evaluated the model (eval mode, or inputs that
        #: require grad): its backward passes are not training steps (TS112).
        self.evaluating = False

    def qualify(self, name: str) -> str:
        # torch.compile wraps the model: show the user's own attribute path.
        name = name.replace("_orig_mod.", "")
        return f"{self.name}.{name}" if name else self.name


class ParamState:
    """What the sanitizer remembers about one trainable parameter."""

    __slots__ = (
        "param",
        "name",
        "grad_ref",
        "grad_version",
        "step_since_grad",
        "dirty",
        "evidence",
        "touched",
        "backwards_since_step",
        "discards",
        "handles",
        "provisional_name",
    )

    def __init__(self, param: torch.Tensor, name: str):
        self.param = param
        self.name = name
        # The .grad tensor (weakly) and its version right after our last look.
        self.grad_ref: weakref.ref | None = None
        self.grad_version = -1
        # An optimizer holding this parameter stepped since our last look.
        self.step_since_grad = False
        # .grad still holds contributions from before an optimizer step (TS106).
        self.dirty = False
        # Lazily computed proof that an uncleared .grad was non-zero (a bool tensor).
        self.evidence: torch.Tensor | None = None
        self.touched = False
        self.backwards_since_step = 0
        # Clears of gradients that no optimizer step used (TS112).
        self.discards = 0
        self.handles: list = []
        # Named after its optimizer slot until a root model that holds it is seen.
        self.provisional_name = False

    def remember_grad(self) -> None:
        """Note the current .grad as 'seen', e.g. after an optimizer step,
        so that in-place changes made before it (clipping, unscaling) do not
        look like a clear."""
        grad = self.param.grad
        if grad is None:
            self.grad_ref = None
        else:
            self.grad_ref = weakref.ref(grad)
            self.grad_version = grad._version


class ParamRegistry:
    """All trainable parameters and root models known to one session."""

    def __init__(
        self,
        stall_backwards: int,
        on_stall: Callable[[ParamState], None],
        is_current: Callable[[], bool] = lambda: True,
    ):
        self.params: dict[int, ParamState] = {}
        self.roots: dict[int, RootModel] = {}
        self.root_of: dict[int, RootModel] = {}  # id(param) -> its root model
        self.names: dict[int, str] = {}  # id(param) -> "model.head.weight", frozen ones too
        self._stall = max(1, int(stall_backwards))
        self._on_stall = on_stall
        # False while a nested sanitize() session has the events: our step
        # hooks do not run then, so counting its backward passes would lie.
        self._is_current = is_current

    # -- discovery -----------------------------------------------------------
    def add_root(self, module: nn.Module, name: str | None = None) -> RootModel:
        """Track a root model's parameters as ``<name>.<qualified parameter name>``;
        ``name`` defaults to the variable that holds it in the user's code."""
        root = self.roots.get(id(module))
        if root is not None:
            return root
        if name is None:
            name = name_in_frame(module, user_frame()) or type(module).__name__
        root = self.roots[id(module)] = RootModel(module, name)
        for pname, param in module.named_parameters():
            self.root_of.setdefault(id(param), root)
            self.names.setdefault(id(param), root.qualify(pname))
            state = self.track(param, root.qualify(pname))
            if state is not None and state.provisional_name:
                state.name = root.qualify(pname)
                state.provisional_name = False
        return root

    def track(self, param: torch.Tensor, name: str, provisional: bool = False) -> ParamState | None:
        """Start watching ``param`` (idempotent); None if it cannot get a gradient.
        A ``provisional`` name is replaced once a root model holding it is seen."""
        state = self.params.get(id(param))
        if state is not None:
            return state
        if not (isinstance(param, torch.Tensor) and param.requires_grad and param.is_leaf):
            return None
        # A parameter frozen when its model was first seen keeps its model path.
        known = self.names.get(id(param))
        if known is not None:
            name, provisional = known, False
        state = self.params[id(param)] = ParamState(param, name)
        state.provisional_name = provisional
        state.handles.append(param.register_post_accumulate_grad_hook(self._accumulate_hook(state)))
        return state

    def _accumulate_hook(self, state: ParamState):
        stall = self._stall
        on_stall = self._on_stall
        is_current = self._is_current
        root_of = self.root_of

        def after_accumulate(param: torch.Tensor) -> None:
            grad = param.grad
            if grad is None or not is_current():
                return
            ref = state.grad_ref
            if ref is not None and ref() is grad and grad._version == state.grad_version + 1:
                # Added onto an untouched .grad: stale if a step happened in between.
                if state.step_since_grad:
                    state.dirty = True
            else:
                state.dirty = False
                state.evidence = None
                if state.backwards_since_step:
                    state.discards += 1
            state.grad_ref = weakref.ref(grad)
            state.grad_version = grad._version
            state.step_since_grad = False
            state.touched = True
            root = root_of.get(id(param))
            if root is not None and root.evaluating:
                return  # an evaluation's backward (FGSM, saliency): no optimizer is expected to step
            n = state.backwards_since_step = state.backwards_since_step + 1
            if n % stall == 0:
                on_stall(state)

        return after_accumulate

    def watch_values(self, state: ParamState) -> None:
        """Confirm future suspicions of ``state`` by value: before each
        accumulation that lands on a .grad unchanged since an optimizer step,
        record whether that .grad is non-zero (no host sync here; the bool
        tensor is read at the next step).  Needed because ``p.grad.data.zero_()``
        clears without bumping the version counter."""
        if len(state.handles) > 1:
            return

        def before_accumulate(_incoming: torch.Tensor) -> None:
            grad = state.param.grad
            ref = state.grad_ref
            if not state.step_since_grad:
                return
            if grad is not None and ref is not None and ref() is grad and grad._version == state.grad_version:
                values = readable(grad)
                state.evidence = None if values is None else values.detach().ne(0).any()
            else:
                state.evidence = None

        state.handles.append(state.param.register_hook(before_accumulate))

    def name_of(self, param: torch.Tensor, fallback: str) -> str:
        state = self.params.get(id(param))
        return state.name if state is not None else fallback

    def close(self) -> None:
        for state in self.params.values():
            for handle in state.handles:
                handle.remove()
            state.handles.clear()
        self.params.clear()
        self.roots.clear()
        self.root_of.clear()
        self.names.clear()
