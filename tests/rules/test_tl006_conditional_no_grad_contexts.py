"""TL006 and a ``with`` item that picks its context manager by a condition: when both arms switch
autograd off (``torch.no_grad() if exporting else torch.inference_mode()``) it is off; when one
arm switches it off and the other does not (``torch.no_grad() if not with_grad else
nullcontext()``) the mode is whatever the condition makes it on the path, which the linter does
not decide: unknown, so not reported (``gradmode.conditional_switch``)."""

from expect_markers import check

CODE = "TL006"

_ROLLOUT = """
from contextlib import nullcontext

import torch
import torch.nn.functional as F


def validate(policy, val_loader, with_grad=False):
    policy.eval()
    value_losses = []
    with CONTEXT:
        for obs, returns in val_loader:
            _, value = policy(obs.to(policy.device))  # MARK
            value_losses.append(F.mse_loss(value, returns.to(policy.device)).item())
    policy.train()
    return sum(value_losses) / len(value_losses)
"""


def _rollout(context: str, mark: str = "") -> str:
    return _ROLLOUT.replace("CONTEXT", context).replace("# MARK", mark)


def test_no_grad_or_a_plain_context_picked_by_a_flag_is_silent(lint):
    check(lint, _rollout("torch.no_grad() if policy.training or not with_grad else nullcontext()"), CODE)


def test_two_no_grad_switches_picked_by_a_flag_are_silent(lint):
    check(lint, _rollout("torch.no_grad() if with_grad else torch.inference_mode()"), CODE)


def test_a_condition_picking_between_two_contexts_that_keep_autograd_on_is_reported(lint):
    source = _rollout(
        "torch.autocast('cuda') if with_grad else nullcontext()",
        "# expect: TL006",
    )
    findings = check(lint, source, CODE)
    assert "`policy(...)` evaluates with autograd on in `validate()`" in findings[0].message
