"""TL015 for a trainer class whose scheduler is a parameter of its ``__init__``: when the class's
own file never builds it, the role is taken from the constructions in the project's other files
(``Trainer(model, optimizer, lr_scheduler=StepLR(...))`` in the main script). A scheduler class of
the project's own that replaces ``step()``, handed in the same way, keeps its own contract; a
trainer that its own file extends or builds is judged in that file alone (its other constructions
are not all the ones there are), so nothing is concluded from the other files."""

import pytest
from expect_markers import assert_marked
from project_helpers import lint_in_project

CODE = "TL015"

_TRAINER = """\
import torch


class Trainer:
    def __init__(self, model, optimizer, loader, lr_scheduler=None, epochs=10, device="cpu"):
        self.model = model.to(device)
        self.optimizer = optimizer
        self.loader = loader
        self.lr_scheduler = lr_scheduler
        self.epochs = epochs
        self.device = device

    def train_epoch(self):
        self.model.train()
        running = 0.0
        for images, masks in self.loader:
            if self.lr_scheduler is not None:
                self.lr_scheduler.step()  {marker}
            images, masks = images.to(self.device), masks.to(self.device)
            self.optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(self.model(images), masks)
            loss.backward()
            self.optimizer.step()
            running += loss.item()
        return running / len(self.loader)

    def fit(self):
        for epoch in range(self.epochs):
            print(f"epoch {{epoch}}: {{self.train_epoch():.4f}}")
{tail}"""

_SCHEDULES = """\
from torch.optim.lr_scheduler import StepLR


class WarmupThenDecay(StepLR):
    \"\"\"Sets the rate of the coming optimizer step itself, so it runs before that step.\"\"\"

    def __init__(self, optimizer, warmup, step_size, gamma=0.1):
        self.warmup = warmup
        self.calls = 0
        super().__init__(optimizer, step_size=step_size, gamma=gamma)

    def step(self, epoch=None):
        self.calls += 1
        scale = min(1.0, self.calls / self.warmup)
        for group, base in zip(self.optimizer.param_groups, self.base_lrs):
            group["lr"] = base * scale * self.gamma ** (self.calls // self.step_size)
"""

_MAIN = """\
import argparse

import torch
from torch.optim.lr_scheduler import StepLR

from seg.data import make_loader
from seg.net import UNet
from seg.schedules import WarmupThenDecay
from seg.trainer import Trainer


def build_scheduler(optimizer, args):
    return {scheduler}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args()
    model = UNet(in_channels=3, classes=2)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    trainer = Trainer(
        model,
        optimizer,
        make_loader("train"),
        lr_scheduler=build_scheduler(optimizer, args),
        epochs=args.epochs,
    )
    trainer.fit()


if __name__ == "__main__":
    main()
"""

_TORCH_STEPLR = "StepLR(optimizer, step_size=10, gamma=0.5)"


def _project(scheduler: str = _TORCH_STEPLR, marker: str = "", tail: str = "") -> dict[str, str]:
    return {
        "seg/__init__.py": "",
        "seg/trainer.py": _TRAINER.format(marker=marker, tail=tail),
        "seg/schedules.py": _SCHEDULES,
        "train.py": _MAIN.format(scheduler=scheduler),
    }


def test_torch_scheduler_handed_to_the_trainer_by_another_file_is_reported(tmp_path):
    files = _project(marker="# expect: TL015")
    findings = lint_in_project(tmp_path, files, "seg/trainer.py", CODE)
    assert_marked(findings, files["seg/trainer.py"])
    assert findings[0].line == 18
    assert "`self.lr_scheduler.step()` runs before `self.optimizer.step()` (line 23)" in findings[0].message


def test_project_scheduler_replacing_step_handed_through_an_open_parameter_is_silent(tmp_path):
    # build_scheduler's result reaches the Trainer's parameter; what it builds is the project's own
    # subclass, whose step() sets the coming step's rate: torch's order does not apply.
    files = _project("WarmupThenDecay(optimizer, warmup=500, step_size=10)")
    assert lint_in_project(tmp_path, files, "seg/trainer.py", CODE) == []


@pytest.mark.parametrize(
    "tail",
    [
        # a subclass in the trainer's own file binds the same parameters from its own callers
        """

class DistillTrainer(Trainer):
    def __init__(self, model, teacher, optimizer, loader, lr_scheduler, epochs=10):
        super().__init__(model, optimizer, loader, lr_scheduler, epochs)
        self.teacher = teacher.eval()
""",
        # the class is also built in its own file: the other files' constructions are not all there are
        """

def smoke_test(model, optimizer, loader, scheduler):
    Trainer(model, optimizer, loader, lr_scheduler=scheduler, epochs=1).fit()
""",
    ],
    ids=["subclass-in-own-file", "built-in-own-file"],
)
def test_trainer_extended_or_built_in_its_own_file_concludes_nothing_from_other_files(tmp_path, tail):
    files = _project(tail=tail)
    assert lint_in_project(tmp_path, files, "seg/trainer.py", CODE) == []
