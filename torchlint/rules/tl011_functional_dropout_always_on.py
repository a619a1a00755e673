"""TL011 functional-dropout-always-on."""

from __future__ import annotations

import ast

from torchlint.analysis.callgraph import passes_unknown_arguments
from torchlint.analysis.conditions import conditions_at, implies
from torchlint.analysis.nodes import argument
from torchlint.engine.rule import Message, Rule, register
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.forward_arguments import zero_outside_training
from torchlint.torchmodel.gradmode import grad_effect
from torchlint.torchmodel.instance_modes import instances_shown, may_run_in_eval_mode
from torchlint.torchmodel.mode_dependence import is_training_flag, rate_may_be_nonzero, rate_may_be_nonzero_in_eval_mode
from torchlint.torchmodel.modules import module_classes
from torchlint.torchmodel.target_version import written_before


@register
class FunctionalDropoutAlwaysOn(Rule):
    code = "TL011"
    name = "functional-dropout-always-on"
    severity = "error"
    summary = "Functional dropout inside a module without `training=`: it stays on in eval mode."
    what = """
        Reports `F.dropout`, `F.dropout1d/2d/3d`, `F.alpha_dropout`,
        `F.feature_alpha_dropout` (and `torch.dropout`-style functions) called inside
        a method of an `nn.Module` subclass without a `training` argument. Passing
        `training=self.training` (or any value) is fine; an explicit `training=True`
        is taken as intended (Monte-Carlo dropout). Dropout on a path that only runs
        in training mode (`if self.training and self.p > 0:`, `... if self.training
        else x`, below `if not self.training: return x`) is not reported, nor is
        dropout in a method decorated with `@torch.no_grad()` or
        `@torch.inference_mode()` (a sampling option of `generate()`): that method
        never trains, so its dropout is meant to run at inference. Nor is dropout
        whose rate is zero on every path (`F.dropout(x, p=self.p)` where `self.p` is a
        constructor parameter defaulting to `0.0` that no construction in a training
        script building the class sets): it drops nothing in either mode; nor dropout
        whose rate is zero whenever the module is not training (a `dropout_p`
        parameter defaulting to `0.0` whose every call site passes `0.0 if not
        self.training else cfg.attention_dropout`, or `p = self.p if self.training
        else 0.0`): in eval mode it drops nothing; nor dropout of a class whose every
        instance, built in a training script, is only trained and never switched to
        eval mode, run under no-grad or loaded (a GAN's discriminator): it runs in
        training mode wherever it runs. Nor dropout in a project written for a
        PyTorch before 1.0, where `training` defaulted to False: one that pins such
        a release at its root (`torch==0.4.1`, `torch<1.0` in a requirements,
        environment or packaging file) or that holds code no newer release runs
        (`loss.data[0]` on a loss it backpropagates, or on `x.sum()`: indexing a
        scalar raises since 1.0).
    """
    why = """
        Unlike the `nn.Dropout` module, the functional form does not know the module's
        mode: its `training` parameter defaults to `True`. `model.eval()` therefore
        does not switch it off, so validation scores are noisy and too low and
        inference is random — and nothing fails.
    """
    example = """
        import torch.nn as nn
        import torch.nn.functional as F


        class Net(nn.Module):
            def forward(self, x):
                x = F.relu(self.fc1(x))
                x = F.dropout(x, p=0.5)
                return self.fc2(x)
    """
    instead = """
        import torch.nn as nn
        import torch.nn.functional as F


        class Net(nn.Module):
            def forward(self, x):
                x = F.relu(self.fc1(x))
                x = F.dropout(x, p=0.5, training=self.training)
                return self.fc2(x)
    """
    VALID = [
        """
import torch.nn as nn
import torch.nn.functional as F
class Net(nn.Module):
    def forward(self, x):
        x = F.dropout(x, 0.1, self.training)
        return F.dropout(x, p=0.2, training=True)  # Monte-Carlo dropout, on purpose
""",
        """
import torch.nn.functional as F
def augment(x):
    return F.dropout(x, p=0.1)
""",
    ]
    INVALID = [
        """
import torch.nn as nn
from torch.nn.functional import dropout2d
class Block(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p
    def forward(self, x):
        def drop(t):
            return dropout2d(t, self.p)  # expect: TL011
        return drop(x)
""",
    ]

    def check(self, ctx):
        if "dropout" not in ctx.source or not module_classes(ctx):
            return
        for call in ctx.calls:
            qual = ctx.call_qualname(call)
            spec = torch_names.DROPOUT_FUNCTIONS.get(qual) if qual else None
            if spec is None:
                continue
            position, parameter = spec
            if argument(call, position, parameter) is not None or passes_unknown_arguments(call):
                continue
            cls = ctx.enclosing(call, ast.ClassDef)
            if cls is None or cls.name not in module_classes(ctx) or _in_training_only_method(ctx, call, cls):
                continue
            if _runs_only_in_training_mode(ctx, call) or _in_no_grad_method(ctx, call, cls):
                continue
            if _rate_always_zero(ctx, call, cls) or _rate_gated_on_training(ctx, call):
                continue
            if _rate_chosen_by_caller(ctx, call):
                continue
            if not may_run_in_eval_mode(ctx, cls):
                continue
            if written_before(ctx, torch_names.DROPOUT_TRAINING_DEFAULT_ON_SINCE):
                continue
            yield self.report(call, self._message(ctx, call, parameter))

    @staticmethod
    def _message(ctx, call, parameter) -> Message:
        text = ctx.quote(call, limit=50)
        return Message(
            f"`{text}` has no `{parameter}=` argument, so dropout stays on in eval mode",
            why=f"`{parameter}` defaults to True: dropout stays on after `model.eval()`",
            help=f"pass `{parameter}=self.training` (or use an `nn.Dropout` submodule)",
        )


# Methods the framework runs only in training mode (Lightning): dropout on is right there.
TRAINING_ONLY_METHODS = frozenset({"training_step"})


def _in_training_only_method(ctx, call: ast.Call, cls: ast.ClassDef) -> bool:
    """True outside methods of ``cls`` (class body) or inside a training-only method."""
    method = None
    for ancestor in ctx.ancestors(call):
        if ancestor is cls:
            break
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
            method = ancestor
    return method is None or method.name in TRAINING_ONLY_METHODS


def _runs_only_in_training_mode(ctx, call: ast.Call) -> bool:
    """The dropout sits on a path that requires the module's training flag: ``if self.training
    and self.p > 0:``, ``F.dropout(x) if self.training else x``, below ``if not self.training:
    return x``. In eval mode that path does not run, which is what ``training=`` would do."""
    return any(implies(test, value, is_training_flag) for test, value in conditions_at(ctx, call))


def _rate_gated_on_training(ctx, call: ast.Call) -> bool:
    """The rate is zero whenever the module is not training, and only the training flag makes it
    non-zero: ``dropout_p`` defaulting to 0.0 whose every call site passes ``0.0 if not
    self.training else cfg.attention_dropout``, or ``p = self.p if self.training else 0.0``. Then
    dropout is off in eval mode, which is what ``training=`` would do."""
    rate = argument(call, 1, "p")
    return rate is not None and rate_may_be_nonzero(ctx, rate) and not rate_may_be_nonzero_in_eval_mode(ctx, rate)


def _rate_chosen_by_caller(ctx, call: ast.Call) -> bool:
    """The rate is a parameter of the method (``def forward(self, x, drop_prob)``) and every call
    that runs it outside a training step passes zero (``self(0., x)`` in ``validate`` and
    ``sample``): dropout is already off wherever the model is not trained."""
    rate = argument(call, 1, "p")
    return rate is not None and zero_outside_training(ctx, rate)


def _in_no_grad_method(ctx, call: ast.Call, cls: ast.ClassDef) -> bool:
    """A method decorated with ``@torch.no_grad()``/``@torch.inference_mode()`` never trains:
    dropout written there (a sampling option of ``generate()``) is meant to run at inference."""
    for ancestor in ctx.ancestors(call):
        if ancestor is cls:
            return False
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(grad_effect(ctx, decorator) is False for decorator in ancestor.decorator_list):
                return True
    return False


def _rate_always_zero(ctx, call: ast.Call, cls: ast.ClassDef) -> bool:
    """Every value that reaches the rate is a literal zero (``F.dropout(x, self.p)`` with ``self.p``
    a constructor parameter defaulting to 0.0 that no construction sets), in a training script that
    shows every instance of the class: dropout off in both modes. A class only defined here may be
    built elsewhere with a rate."""
    rate = argument(call, 1, "p")
    return rate is not None and instances_shown(ctx, cls) and not rate_may_be_nonzero(ctx, rate)
