"""TL015 for a scheduler that a function of the project builds and returns (``model, opt, sched =
build(args)``): whether its class replaces torch's ``step()`` is read from the constructor the
returned value comes from, in whichever file the function and the class live."""

from project_helpers import write

from torchlint.engine.lint import lint_file
from torchlint.engine.rule import all_rules

CODE = "TL015"

_SCHEDULES = """\
from torch.optim.lr_scheduler import _LRScheduler


class StepsItself(_LRScheduler):
    def step(self, epoch=None):
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr


class LinearRamp(StepsItself):
    def __init__(self, optimizer, total):
        self.total = total
        super().__init__(optimizer)

    def get_lr(self):
        return [base * self.last_epoch / self.total for base in self.base_lrs]


class TorchStepRamp(_LRScheduler):
    def get_lr(self):
        return [base * min(1.0, self.last_epoch / 100) for base in self.base_lrs]
"""
_SETUP = """\
import torch
from schedules import CLASS


def make_optimizer(model, total, warm):
    optimizer, schedule = None, None
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    if warm:
        schedule = CLASS(optimizer, total)
    return model, optimizer, schedule
"""
_TRAIN = """\
from setup import make_optimizer


def fit(model, batches, total):
    model, optimizer, schedule = make_optimizer(model, total, True)
    for inputs, labels in batches:
        loss = model(inputs, labels)
        loss.backward()
        schedule.step()
        optimizer.step()
        optimizer.zero_grad()
"""
_STEP_LINE = 9


def _lint(tmp_path, cls: str) -> list:
    write(
        tmp_path,
        {"schedules.py": _SCHEDULES, "setup.py": _SETUP.replace("CLASS", cls), "train.py": _TRAIN},
    )
    return [f for f in lint_file(str(tmp_path / "train.py"), [all_rules()[CODE]]).findings if f.code == CODE]


def test_a_returned_scheduler_whose_base_replaces_step_has_its_own_contract(tmp_path):
    assert _lint(tmp_path, "LinearRamp") == []


def test_a_returned_scheduler_that_keeps_torchs_step_is_still_reported(tmp_path):
    found = _lint(tmp_path, "TorchStepRamp")
    assert [f.line for f in found] == [_STEP_LINE]
    assert "`schedule.step()` runs before `optimizer.step()` (line 10)" in found[0].message
