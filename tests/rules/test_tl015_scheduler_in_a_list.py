"""TL015 for an element of a list of schedulers (one schedule per training stage): ``scheds[i]`` is
a torch scheduler when every element the list may hold is one, whether the list is built in the
file (literal, ``append``, comprehension) or returned by a helper of another file. A helper that
returns one scheduler on some branches and a list on others still gives a list of schedulers to
the indexing (a scheduler cannot be indexed)."""

from project_helpers import write

from torchlint.engine.lint import lint_file
from torchlint.engine.rule import all_rules

CODE = "TL015"

_SCHEDULES = """\
import torch


class OwnStep(torch.optim.lr_scheduler.LambdaLR):
    def step(self, epoch=None):
        self.last_epoch += 1
        for group in self.optimizer.param_groups:
            group["lr"] = group["initial_lr"] * min(1.0, (self.last_epoch + 1) / 50)


def stage_schedules(optimizer, stages, single):
    if single:
        return torch.optim.lr_scheduler.StepLR(optimizer, 10)
    schedules = []
    for milestones in stages:
        schedules.append(CLASS)
    return schedules
"""
_TRAIN = """\
import torch

from schedules import stage_schedules


def fit(model, loaders, stages):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    schedules = stage_schedules(optimizer, stages, False)
    for stage, loader in enumerate(loaders):
        for inputs, targets in loader:
            schedules[stage].step()
            loss = torch.nn.functional.mse_loss(model(inputs), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""
_STEP_LINE = 11


def _lint(tmp_path, element: str, train: str = _TRAIN) -> list:
    write(tmp_path, {"schedules.py": _SCHEDULES.replace("CLASS", element), "train.py": train})
    return [f for f in lint_file(str(tmp_path / "train.py"), [all_rules()[CODE]]).findings if f.code == CODE]


def test_an_element_of_a_list_of_torch_schedulers_from_another_file_is_reported(tmp_path):
    found = _lint(tmp_path, "torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones)")
    assert [f.line for f in found] == [_STEP_LINE]
    assert "`schedules[stage].step()` runs before `optimizer.step()` (line 15)" in found[0].message


def test_the_last_element_is_reported_too(tmp_path):
    found = _lint(
        tmp_path,
        "torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones)",
        _TRAIN.replace("schedules[stage]", "schedules[-1]"),
    )
    assert [f.line for f in found] == [_STEP_LINE]
    assert "`schedules[-1].step()` runs before `optimizer.step()`" in found[0].message


def test_a_list_of_objects_not_shown_to_be_schedulers_is_left_alone(tmp_path):
    assert _lint(tmp_path, "make_schedule(optimizer, milestones)") == []


def test_a_list_built_in_the_file_of_schedulers_that_replace_step_is_left_alone(tmp_path):
    train = _TRAIN.replace(
        "schedules = stage_schedules(optimizer, stages, False)",
        "schedules = [OwnStep(optimizer, lambda s: 1.0) for _ in stages]",
    ).replace("from schedules import stage_schedules", "from schedules import OwnStep")
    assert _lint(tmp_path, "None", train) == []


def test_a_list_mixing_a_scheduler_with_another_object_is_left_alone(tmp_path):
    train = _TRAIN.replace(
        "schedules = stage_schedules(optimizer, stages, False)",
        "schedules = [torch.optim.lr_scheduler.StepLR(optimizer, 5), stages]",
    )
    assert _lint(tmp_path, "None", train) == []


def test_a_slice_of_the_list_is_no_scheduler(tmp_path):
    found = _lint(
        tmp_path,
        "torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones)",
        _TRAIN.replace("schedules[stage].step()", "schedules[stage:].step()"),
    )
    assert found == []
