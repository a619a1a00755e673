"""TL016: a helper's backward under ``if train:``, where ``train`` is a comparison of a parameter the
function computed itself (``train = phase == "train"``), counts only when the no-grad call's constant
arguments leave that branch open."""

from expect_markers import check

_RUN_PHASE = """
import torch

def run_phase(model, loader, optimizer, criterion, phase="train"):
    TRAINING
    model.train(training)
    total = 0.0
    for images, labels in loader:
        loss = criterion(model(images), labels)
        if training:
            optimizer.zero_grad()
            loss.backward()  # MARK
            optimizer.step()
        total += loss.item()
    return total / len(loader)

def main(model, loaders, optimizer, criterion):
    for epoch in range(30):
        run_phase(model, loaders["train"], optimizer, criterion, phase="train")
        with torch.no_grad():
            run_phase(model, loaders["val"], optimizer, criterion, phase=PHASE)
"""


def _source(phase, training='training = phase == "train"', mark=""):
    return _RUN_PHASE.replace("TRAINING", training).replace("PHASE", phase).replace("# MARK", mark)


def test_no_grad_call_passing_an_evaluation_phase_is_silent(lint):
    assert lint(_source('"val"'), "TL016") == []


def test_negated_flag_and_membership_test_are_read_through_too(lint):
    source = _source('"test"', training='evaluating = phase in ("val", "test")\n    training = not evaluating')
    assert lint(source, "TL016") == []


def test_no_grad_call_passing_the_training_phase_is_reported(lint):
    findings = check(lint, _source('"train"', mark="# expect: TL016"), "TL016")
    assert findings[0].message.startswith("`loss.backward()` runs under `torch.no_grad()`")
    assert "(line 20) (called from line 21)" in findings[0].message


def test_no_grad_call_passing_a_phase_the_code_does_not_fix_is_reported(lint):
    check(lint, _source("args.phase", mark="# expect: TL016"), "TL016")


def test_flag_rebound_after_the_comparison_is_reported(lint):
    rebound = 'training = phase == "train"\n    training = training or args.finetune'
    check(lint, _source('"val"', training=rebound, mark="# expect: TL016"), "TL016")


def test_phase_rebound_between_the_flag_and_the_branch_is_reported(lint):
    source = _source('"val"', mark="# expect: TL016").replace(
        "    model.train(training)\n",
        '    model.train(training)\n    phase = args.phase\n    training = phase != "val"\n',
    )
    check(lint, source, "TL016")
