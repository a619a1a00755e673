"""Function summaries, PyTorch side (torchlint.torchmodel.summaries / effects): what a function does
to what it is handed and what it returns, as the same plain data wherever the function lives."""

import ast
import textwrap

from torchlint.analysis.context import FileContext
from torchlint.torchmodel.effects import Effect, events_at_call
from torchlint.torchmodel.events import EventKind
from torchlint.torchmodel.roles import Role
from torchlint.torchmodel.summaries import call_summary, function_summary

HELPERS = """
import torch
import torch.nn.functional as F

def zero_grad(model_params):
    for param in model_params:
        if param.grad is not None:
            param.grad.detach_()
            param.grad.zero_()

def set_eval(model):
    model.module.eval()

def apply(loss, optimizer, scaler):
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()

@torch.no_grad()
def predict(net, x):
    return F.softmax(net(x), dim=-1)

def build(arch):
    model = torch.nn.Linear(4, 2)
    return model

def fit(model, loader, opt):
    for x, y in loader:
        zero_grad(model.parameters())
        apply(F.cross_entropy(model(x), y), opt, scaler)

def fit_skipping_bad_batches(model, loader, opt):
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        if not torch.isfinite(loss):
            opt.zero_grad()
            continue
        opt.step()
        opt.zero_grad()

def clear_then_return_early(model, loss, opt, ready):
    loss.backward()
    if not ready:
        opt.zero_grad()
        return
    opt.step()
"""


def summary_of(name):
    source = textwrap.dedent(HELPERS)
    ctx = FileContext("helpers.py", source, ast.parse(source))
    return ctx, function_summary(ctx, ctx.functions[name][0])


def test_clearing_the_gradients_of_a_parameter():
    _, summary = summary_of("zero_grad")
    assert summary.effects == (Effect(EventKind.CLEAR_GRAD, "model_params"),)
    assert summary.does(EventKind.CLEAR_GRAD, "model_params")


def test_a_mode_switch_on_part_of_a_parameter():
    _, summary = summary_of("set_eval")
    assert summary.effects == (Effect(EventKind.EVAL, "model", ".module"),)


def test_backward_and_step_of_what_the_caller_passes():
    _, summary = summary_of("apply")
    assert summary.effects == (
        Effect(EventKind.BACKWARD, "loss"),
        Effect(EventKind.STEP, "optimizer"),
        Effect(EventKind.SCALER_UPDATE, "scaler"),
    )


def test_no_grad_and_returned_values():
    _, predict = summary_of("predict")
    assert predict.runs_without_grad and predict.returns_activation == "softmax" and predict.effects == ()
    _, build = summary_of("build")
    assert build.returns is Role.MODEL and not build.runs_without_grad


def test_effects_of_helpers_the_function_calls_are_its_own():
    _, fit = summary_of("fit")
    kinds = [(e.kind, e.parameter) for e in fit.effects]
    assert kinds == [
        (EventKind.CLEAR_GRAD, "model"),  # zero_grad(model.parameters()): the parameters of `model`
        (EventKind.BACKWARD, None),  # the loss is computed inside
        (EventKind.STEP, "opt"),
        (EventKind.SCALER_UPDATE, None),  # `scaler` is not a parameter of fit
    ]


def test_a_branch_that_leaves_runs_its_effects_after_what_it_passes_over():
    # The skipped batch's clear runs where the next turn begins, after this turn's step would have.
    _, fit = summary_of("fit_skipping_bad_batches")
    assert [(e.kind, e.parameter) for e in fit.effects] == [
        (EventKind.BACKWARD, None),
        (EventKind.STEP, "opt"),
        (EventKind.ZERO_GRAD, "opt"),
        (EventKind.ZERO_GRAD, "opt"),
    ]
    _, early = summary_of("clear_then_return_early")
    assert [(e.kind, e.parameter) for e in early.effects] == [
        (EventKind.BACKWARD, "loss"),
        (EventKind.STEP, "opt"),
        (EventKind.ZERO_GRAD, "opt"),
    ]


def test_effects_placed_at_a_call_site_name_the_arguments():
    ctx, apply = summary_of("apply")
    call = ast.parse("apply(loss / 4, opt_d, grad_scaler)").body[0].value
    events = events_at_call(call, ctx.functions["apply"][0], apply.effects)
    assert [(e.kind, e.target, ast.unparse(e.arg) if e.arg else None) for e in events] == [
        (EventKind.BACKWARD, None, "loss / 4"),
        (EventKind.STEP, "opt_d", None),
        (EventKind.SCALER_UPDATE, "grad_scaler", None),
    ]
    assert all(e.node is call for e in events)


def test_a_call_is_summarised_when_the_linter_can_read_the_function_and_only_then():
    source = textwrap.dedent(HELPERS) + "set_eval(net)\nprint(net)\n"
    ctx = FileContext("helpers.py", source, ast.parse(source))
    set_eval_call, print_call = ctx.calls[-2:]
    assert call_summary(ctx, set_eval_call).does(EventKind.EVAL, "model")
    assert call_summary(ctx, print_call) is None


REBINDING = """
import copy
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

def probe(model, images):
    model = copy.deepcopy(model)
    model.eval()
    return model(images)

def on_device(model, device):
    model = model.to(device)
    model.eval()

def wrapped(model, rank):
    model = DDP(model, device_ids=[rank])
    model.train()

def switch_then_copy(model):
    model.eval()
    model = copy.deepcopy(model)
    model.train()

def maybe_copy(model, keep_original):
    if not keep_original:
        model = copy.deepcopy(model)
    model.eval()

def restart(optimizer, model, lr):
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    optimizer.zero_grad()
    optimizer.step()

def clear(params):
    params = list(params)
    for p in params:
        p.grad = None

def clear_others(params, others):
    params = others
    for p in params:
        p.grad = None

def backward_scaled(loss, accum_steps):
    loss = loss / accum_steps
    loss.backward()

def per_model(model, models):
    for model in models:
        model.eval()
"""


def effects_of_rebinding(name):
    source = textwrap.dedent(REBINDING)
    ctx = FileContext("rebinding.py", source, ast.parse(source))
    return [(e.kind, e.parameter) for e in function_summary(ctx, ctx.functions[name][0]).effects]


def test_an_effect_on_a_rebound_parameter_is_an_effect_on_something_else():
    # A copy, a new optimizer, other tensors, a loop variable: the caller's argument is untouched.
    assert effects_of_rebinding("probe") == [(EventKind.EVAL, None)]
    assert effects_of_rebinding("restart") == [(EventKind.ZERO_GRAD, None), (EventKind.STEP, None)]
    assert effects_of_rebinding("clear_others") == [(EventKind.CLEAR_GRAD, None)]
    assert effects_of_rebinding("backward_scaled") == [(EventKind.BACKWARD, None)]
    assert effects_of_rebinding("per_model") == [(EventKind.EVAL, None)]


def test_rebinding_to_the_same_object_or_after_the_effect_keeps_it():
    assert effects_of_rebinding("on_device") == [(EventKind.EVAL, "model")]
    assert effects_of_rebinding("wrapped") == [(EventKind.TRAIN, "model")]
    assert effects_of_rebinding("clear") == [(EventKind.CLEAR_GRAD, "params")]  # the same parameters
    # Switched before the copy is made; the copy's train() is not the argument's.
    assert effects_of_rebinding("switch_then_copy") == [(EventKind.EVAL, "model"), (EventKind.TRAIN, None)]
    # On the path that keeps the argument, the switch is the argument's: an effect is what a call may do.
    assert effects_of_rebinding("maybe_copy") == [(EventKind.EVAL, "model")]
