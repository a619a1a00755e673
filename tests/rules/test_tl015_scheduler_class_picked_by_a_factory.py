"""TL015 for a scheduler that a factory of another file builds by calling a class it picked into a
variable (``schedule_class = lrs.StepLR`` on one branch, ``= lrs.MultiStepLR`` on another, then
``return schedule_class(optimizer, **kwargs)``): the object is torch's when every class that may
reach the call is a torch scheduler (or a subclass keeping torch's ``step()``); one branch that may
bind a class with its own ``step()`` contract, or anything not shown, leaves it unknown."""

import pytest
from project_helpers import write

from torchlint.engine.lint import lint_file
from torchlint.engine.rule import all_rules

CODE = "TL015"

_FACTORY = """\
import torch.optim as optim
import torch.optim.lr_scheduler as lrs
from torch.optim.lr_scheduler import _LRScheduler


class HoldThenDecay(_LRScheduler):
    def get_lr(self):
        return [base * (0.5 if self.last_epoch > 100 else 1.0) for base in self.base_lrs]


class WarmRestart(_LRScheduler):
    def step(self, epoch=None):
        self.last_epoch = 0 if epoch is None else epoch
        for group in self.optimizer.param_groups:
            group["lr"] = group["initial_lr"]


def build_optimizer(settings, network):
    return optim.Adam(network.parameters(), lr=settings.lr)


def build_schedule(settings, optimizer):
    if settings.schedule == "step":
        schedule_class = lrs.StepLR
        options = {"step_size": settings.decay_every, "gamma": settings.gamma}
    elif settings.schedule.startswith("milestones"):
        schedule_class = OTHER
        options = {"milestones": settings.milestones, "gamma": settings.gamma}
    else:
        schedule_class = lrs.CosineAnnealingLR
        options = {"T_max": settings.epochs}
    return schedule_class(optimizer, **options)
"""
_TRAINER = """\
import factory


class Trainer:
    def __init__(self, settings, network, batches, criterion):
        self.network = network
        self.batches = batches
        self.criterion = criterion
        self.optimizer = factory.build_optimizer(settings, network)
        self.schedule = factory.build_schedule(settings, self.optimizer)

    def train_epoch(self):
        self.schedule.step()
        self.network.train()
        for inputs, targets in self.batches:
            self.optimizer.zero_grad()
            loss = self.criterion(self.network(inputs), targets)
            loss.backward()
            self.optimizer.step()
"""
_STEP_LINE = 13


def _lint(tmp_path, other: str) -> list:
    write(tmp_path, {"factory.py": _FACTORY.replace("OTHER", other), "trainer.py": _TRAINER})
    return [f for f in lint_file(str(tmp_path / "trainer.py"), [all_rules()[CODE]]).findings if f.code == CODE]


@pytest.mark.parametrize("other", ["lrs.MultiStepLR", "HoldThenDecay"])
def test_every_class_the_factory_may_call_is_a_torch_scheduler(tmp_path, other):
    found = _lint(tmp_path, other)
    assert [(f.line, f.column) for f in found] == [(_STEP_LINE, 9)]
    assert "`self.schedule.step()` runs before `self.optimizer.step()` (line 19)" in found[0].message


@pytest.mark.parametrize(
    "other",
    [
        "WarmRestart",  # a project class with its own step(): the project's contract
        "settings.schedule_class",  # a class the settings carry: not shown
        "getattr(lrs, settings.schedule)",  # the result of a call, not a class the code shows
    ],
)
def test_a_branch_that_may_pick_a_class_not_shown_to_keep_torchs_step_is_silent(tmp_path, other):
    assert _lint(tmp_path, other) == []


def test_a_class_picked_from_a_parameter_is_silent(tmp_path):
    factory = _FACTORY.replace("OTHER", "lrs.MultiStepLR").replace(
        "def build_schedule(settings, optimizer):", "def build_schedule(settings, optimizer, schedule_class=None):"
    )
    factory = factory.replace(
        '    if settings.schedule == "step":',
        '    if schedule_class is not None:\n        pass\n    elif settings.schedule == "step":',
    )
    write(tmp_path, {"factory.py": factory, "trainer.py": _TRAINER})
    found = [f for f in lint_file(str(tmp_path / "trainer.py"), [all_rules()[CODE]]).findings if f.code == CODE]
    assert found == []
