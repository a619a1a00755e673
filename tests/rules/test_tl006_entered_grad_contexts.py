"""TL006: an explicit ``__enter__()`` of a grad context manager is a grad switch statement, like a
bare ``torch.set_grad_enabled(False)``: in force from there on, until its ``__exit__(...)``."""

from expect_markers import check

_SCORE_SEPARATION = """
import torch
from separation import SeparationModel, SeparationDataset, pit_loss

def main(conf):
    model = SeparationModel.from_pretrained(conf["checkpoint"])
    device = next(model.parameters()).device
    test_set = SeparationDataset(conf["test_dir"], segment=None)
    scores = []
    SWITCH
    for idx in range(len(test_set)):
        mixture, sources = test_set[idx]
        estimate = model(mixture[None].to(device))  # MARK
        loss = pit_loss(estimate, sources[None].to(device))
        scores.append(loss.item())
    AFTER
    print(sum(scores) / len(scores))
"""


def _source(switch, after="pass", mark=""):
    return _SCORE_SEPARATION.replace("SWITCH", switch).replace("AFTER", after).replace("# MARK", mark)


def test_no_grad_entered_by_hand_before_the_loop_is_silent(lint):
    assert lint(_source("torch.no_grad().__enter__()"), "TL006") == []


def test_inference_mode_entered_through_a_name_is_silent(lint):
    source = _source("frozen = torch.inference_mode()\n    frozen.__enter__()")
    assert lint(source, "TL006") == []


def test_set_grad_enabled_false_entered_by_hand_is_silent(lint):
    assert lint(_source("torch.set_grad_enabled(False).__enter__()"), "TL006") == []


def test_context_exited_before_the_loop_leaves_the_forward_reported(lint):
    switch = "guard = torch.no_grad()\n    guard.__enter__()\n    guard.__exit__(None, None, None)"
    findings = check(lint, _source(switch, mark="# expect: TL006"), "TL006")
    assert "evaluates with autograd on in the evaluation loop" in findings[0].message


def test_enable_grad_entered_by_hand_leaves_the_forward_reported(lint):
    check(lint, _source("torch.enable_grad().__enter__()", mark="# expect: TL006"), "TL006")


def test_enter_of_an_unrelated_context_leaves_the_forward_reported(lint):
    check(lint, _source("open('scores.log').__enter__()", mark="# expect: TL006"), "TL006")
