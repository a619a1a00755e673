"""TL016: a trainer whose backward sits under ``if training:`` in a step method, reached from a
no-grad block through a method that hands its own ``training`` parameter on unchanged
(``self._step(x, y, training=training)``). The constant the no-grad call passes decides the branch
at the far end of the chain; a value it cannot decide, or one rebound on the way, keeps the finding."""

from expect_markers import check

_TRAINER = """
import torch


class Trainer:
    def __init__(self, model, criterion, optimizer):
        self.model = model
        self.criterion = criterion
        self.optimizer = optimizer

    def _step(self, inputs, target, training=False):
        output = self.model(inputs)
        loss = self.criterion(output, target)
        if training:
            self.optimizer.zero_grad()
            loss.backward()  # MARK
            self.optimizer.step()
        return float(loss)

    def run_epoch(self, loader, training=False):
        HANDED_ON
        total = 0.0
        for inputs, target in loader:
            total += self._step(inputs, target, training=training)
        return total / len(loader)

    def train(self, loader):
        self.model.train()
        return self.run_epoch(loader, training=True)

    def validate(self, loader):
        self.model.eval()
        with torch.no_grad():
            return self.run_epoch(loader, training=PASSED)
"""


def _source(passed, mark="", handed_on="pass"):
    return _TRAINER.replace("PASSED", passed).replace("# MARK", mark).replace("HANDED_ON", handed_on)


def test_no_grad_caller_passing_false_down_a_chain_is_silent(lint):
    assert lint(_source("False"), "TL016") == []


def test_default_of_the_intermediate_method_decides_too(lint):
    source = _source("False").replace("self.run_epoch(loader, training=False)", "self.run_epoch(loader)")
    assert lint(source, "TL016") == []


def test_no_grad_caller_passing_true_down_a_chain_is_reported(lint):
    findings = check(lint, _source("True", mark="# expect: TL016"), "TL016")
    assert findings[0].line == 16
    assert findings[0].message.startswith("`loss.backward()` runs under `torch.no_grad()` (line 33)")
    assert "(called from line 34)" in findings[0].message


def test_no_grad_caller_passing_a_value_it_cannot_decide_is_reported(lint):
    check(lint, _source("self.finetune", mark="# expect: TL016"), "TL016")


def test_parameter_rebound_before_it_is_handed_on_is_reported(lint):
    source = _source("False", mark="# expect: TL016", handed_on="training = training or self.finetune")
    check(lint, source, "TL016")
