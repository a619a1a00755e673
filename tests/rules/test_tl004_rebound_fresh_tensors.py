"""TL004 and an optimizer over a tensor that is itself new in each iteration, found by data flow:
a copy of a name bound to a detached tensor (``old = x.detach(); y = old.clone()``) is a new leaf
(new_tensors.creates_leaf_tensor), and a tensor the loop's body rebinds, in every pass after the
optimizer's construction, to a new leaf (``output = F.interpolate(output, ...).detach()`` at the end
of a multiscale phase) is a different object in each iteration (fresh_runs._rebound_to_new_leaf)."""

from expect_markers import check

_MULTISCALE = """
import torch
import torch.nn.functional as F

def synthesize(model, criterion, target, sizes, num_steps):
    output = torch.rand(1, 3, *sizes[0])
    for phase, size in enumerate(sizes):
        optimizer = torch.optim.LBFGS([output.requires_grad_()]){marker}
        for step in range(num_steps):
            optimizer.zero_grad()
            loss = criterion(model(output), target)
            loss.backward()
            optimizer.step(lambda: loss)
{rebind}
    return output
"""

_NEW_PHASE = "        output = F.interpolate(output, scale_factor=2).detach()"


def test_tensor_rebound_to_a_new_leaf_each_phase_is_silent(lint):
    check(lint, _MULTISCALE.format(marker="", rebind=_NEW_PHASE), "TL004")


def test_tensor_kept_across_phases_is_reported(lint):
    check(lint, _MULTISCALE.format(marker="  # expect: TL004", rebind="        print(phase)"), "TL004")


def test_tensor_rebound_only_on_some_passes_is_reported(lint):
    rebind = "        if phase % 2:\n    " + _NEW_PHASE
    check(lint, _MULTISCALE.format(marker="  # expect: TL004", rebind=rebind), "TL004")


_PER_CALL = """
import torch

def fit_logits(pd, actions, logits, target, nsteps=20):
    old_logits = logits.detach()
    logits = {copied}
    logits.requires_grad = True
    optim = torch.optim.RMSprop([logits], lr=0.1, alpha=0.8){marker}
    for i in range(nsteps):
        loss = (pd.logp(actions, logits) - target).pow(2).sum()
        optim.zero_grad()
        loss.backward()
        optim.step()
    return logits.detach()

def check_all(pds, actions, logits, target):
    for pd in pds:
        print(fit_logits(pd, actions, logits, target))
"""


def test_copy_of_a_detached_name_is_a_new_tensor_each_call(lint):
    check(lint, _PER_CALL.format(copied="old_logits.clone()", marker=""), "TL004")


def test_copy_of_a_caller_tensor_is_reported(lint):
    source = _PER_CALL.replace("    logits.requires_grad = True\n", "")
    check(lint, source.format(copied="logits.clone()", marker="  # expect: TL004"), "TL004")
