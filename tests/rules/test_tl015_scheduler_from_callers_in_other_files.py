"""TL015 for a training step whose scheduler is a parameter: the role is taken from the callers in
the project's other files (``train_iteration(model, optimizer, loader, scheduler)`` called by the
main script), and a project helper that returns a torch scheduler or None (no warm-up asked for)
still returns a scheduler. A scheduler class of the project's own with its own ``step()`` keeps
its own contract: not reported."""

import pytest
from expect_markers import assert_marked
from project_helpers import lint_in_project, write

CODE = "TL015"

_LOOP = """\
import torch


def train_iteration(model, optimizer, loader, scheduler, clip=1.0):
    model.train()
    total = 0.0
    for tokens, targets in loader:
        optimizer.zero_grad()
        logits = model(tokens)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        if scheduler is not None:
            scheduler.step()  {marker}
        optimizer.step()
        total += loss.item()
    return total / len(loader)
"""

_SCHEDULES = """\
import math

from torch.optim.lr_scheduler import LambdaLR


def warmup_schedule(optimizer, warmup_steps):
    if warmup_steps <= 0:
        return None
    return LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup_steps))


class InverseSqrtSchedule:
    \"\"\"The Transformer schedule: sets the learning rate of the coming step, so it runs first.\"\"\"

    def __init__(self, optimizer, d_model, warmup_steps):
        self.optimizer = optimizer
        self.scale = d_model**-0.5
        self.warmup_steps = warmup_steps
        self.step_num = 0

    def step(self):
        self.step_num += 1
        lr = self.scale * min(self.step_num**-0.5, self.step_num * self.warmup_steps**-1.5)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
"""

_MAIN = """\
import argparse

import torch

from lm.data import batches
from lm.loop import train_iteration
from lm.model import TinyLM
from lm.schedules import InverseSqrtSchedule, warmup_schedule


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=0)
    args = parser.parse_args()
    model = TinyLM(vocab=32000, d_model=512)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    scheduler = {scheduler}
    for epoch in range(args.epochs):
        loss = train_iteration(model, optimizer, batches("train"), scheduler)
        print(f"epoch {{epoch}}: {{loss:.3f}}")


if __name__ == "__main__":
    main()
"""


def _project(scheduler: str, marker: str) -> dict[str, str]:
    return {
        "lm/__init__.py": "",
        "lm/loop.py": _LOOP.format(marker=marker),
        "lm/schedules.py": _SCHEDULES,
        "train.py": _MAIN.format(scheduler=scheduler),
    }


@pytest.mark.parametrize(
    "scheduler",
    [
        "torch.optim.lr_scheduler.StepLR(optimizer, step_size=1000, gamma=0.5)",
        # a helper of the project: a torch LambdaLR, or None when no warm-up is asked for
        "warmup_schedule(optimizer, args.warmup)",
    ],
)
def test_torch_scheduler_passed_in_from_another_file_is_reported(tmp_path, scheduler):
    files = _project(scheduler, "# expect: TL015")
    findings = lint_in_project(tmp_path, files, "lm/loop.py", CODE)
    assert_marked(findings, files["lm/loop.py"])
    assert "`scheduler.step()` runs before `optimizer.step()` (line 15)" in findings[0].message


def test_own_scheduler_class_passed_in_from_another_file_is_silent(tmp_path):
    # Its step() sets the rate of the coming optimizer step itself: torch's order does not apply.
    files = _project("InverseSqrtSchedule(optimizer, d_model=512, warmup_steps=4000)", "")
    assert lint_in_project(tmp_path, files, "lm/loop.py", CODE) == []


def test_the_caller_and_the_helper_are_dependencies_of_the_loop(tmp_path):
    # The verdict on lm/loop.py rests on train.py and lm/schedules.py: a cached result of the loop
    # must be dropped when either changes.
    from torchlint.engine.lint import lint_file
    from torchlint.engine.rule import all_rules

    write(tmp_path, {"pyproject.toml": "", **_project("warmup_schedule(optimizer, args.warmup)", "")})
    result = lint_file(str(tmp_path / "lm/loop.py"), [all_rules()[CODE]])
    assert [f.line for f in result.findings] == [14]
    assert {str(tmp_path / "train.py"), str(tmp_path / "lm/schedules.py")} <= set(result.dependencies)
