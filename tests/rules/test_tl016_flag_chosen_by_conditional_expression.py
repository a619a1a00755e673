"""TL016: a helper's flag chosen between two constants by a comparison of a parameter
(``train = True if what == "train" else False``) is read as that comparison: a no-grad call passing
an evaluation phase runs no backward under ``if train:``."""

from expect_markers import check

_START = """
import torch

def start(what, nbatches):
    train = True if what == "train" else False
    model.train()
    for j in range(nbatches):
        inputs, targets = dataloader.get_batch(what)
        loss = criterion(model(inputs), targets)
        if train:
            optimizer.zero_grad()
            loss.backward()  # MARK
            optimizer.step()

for epoch in range(500):
    start("train", opt.epoch_size)
    with torch.no_grad():
        start(PHASE, opt.epoch_size // 2)
"""


def test_no_grad_call_passing_the_validation_phase_is_silent(lint):
    assert lint(_START.replace("PHASE", '"valid"'), "TL016") == []


def test_no_grad_call_passing_the_training_phase_is_reported(lint):
    check(lint, _START.replace("PHASE", '"train"').replace("# MARK", "# expect: TL016"), "TL016")


def test_choice_between_values_that_are_not_constants_is_reported(lint):
    source = _START.replace("PHASE", '"valid"').replace("# MARK", "# expect: TL016")
    source = source.replace('True if what == "train" else False', 'args.train if what == "train" else args.eval_train')
    check(lint, source, "TL016")
