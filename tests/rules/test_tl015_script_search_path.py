"""TL015 for a scheduler class of the project's package that a script in a sub-folder imports
after putting the folder above it on ``sys.path`` (``analysis.search_path``): Python finds the
package there, so the linter reads the class and judges it by torch's contract."""

import ast

from project_helpers import write

from torchlint.analysis.search_path import added_search_dirs
from torchlint.engine.lint import lint_file
from torchlint.engine.rule import all_rules

CODE = "TL015"

_SCHEDULE = """\
import torch


class LinearWarmupLR(torch.optim.lr_scheduler._LRScheduler):
    def __init__(self, optimizer, warmup=100, last_epoch=-1):
        self.warmup = warmup
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        scale = min(1.0, (self.last_epoch + 1) / self.warmup)
        return [lr * scale for lr in self.base_lrs]
STEP
"""
_OWN_STEP = """
    def step(self, epoch=None):
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
"""
_SCRIPT = """\
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(PATH)

from toolkit.schedules import LinearWarmupLR


class Runner:
    def __init__(self, net, batches):
        self.net = net
        self.batches = batches
        self.opt = torch.optim.SGD(net.parameters(), lr=0.1)
        self.sched = LinearWarmupLR(self.opt, warmup=50)

    def fit(self):
        for x, y in self.batches:
            self.sched.step()
            loss = torch.nn.functional.mse_loss(self.net(x), y)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
"""
_STEP_LINE = 21


def _lint(tmp_path, path_expr: str, step: str = "") -> list:
    # No root marker anywhere: the script's folder alone would be its project.
    write(
        tmp_path,
        {
            "toolkit/schedules.py": _SCHEDULE.replace("STEP", step),
            "tools/train.py": _SCRIPT.replace("PATH", path_expr),
        },
    )
    return [f for f in lint_file(str(tmp_path / "tools/train.py"), [all_rules()[CODE]]).findings if f.code == CODE]


def test_a_torch_subclass_found_through_the_scripts_own_sys_path_is_judged_by_torchs_contract(tmp_path):
    found = _lint(tmp_path, "os.path.dirname(HERE)")
    assert [(f.line, f.code) for f in found] == [(_STEP_LINE, CODE)]
    assert "`self.sched.step()` runs before `self.opt.step()` (line 25)" in found[0].message


def test_the_same_class_with_its_own_step_keeps_its_own_contract(tmp_path):
    assert _lint(tmp_path, "os.path.dirname(HERE)", _OWN_STEP) == []


def test_a_folder_the_code_does_not_show_is_not_searched(tmp_path):
    # From the environment: unknown, so the class stays unknown and nothing is reported.
    assert _lint(tmp_path, "os.environ.get('TOOLKIT_HOME', '')") == []


def test_the_folders_a_script_adds_from_its_own_location():
    source = """\
import os, sys
from pathlib import Path
from os import path as osp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.append(osp.join(osp.dirname(__file__), "..", "lib"))
ROOT = Path(__file__).parent.parent
sys.path.append(str(ROOT / "src"))
sys.path.append(os.path.split(os.path.realpath(__file__))[0])
sys.path.append(os.getcwd())
sys.path.append(sys.argv[1])
moved = "x"
moved = "y"
sys.path.append(moved)
"""
    assert added_search_dirs(ast.parse(source), "/repo/tools/train.py") == (
        "/repo",
        "/repo/lib",
        "/repo/src",
        "/repo/tools",
    )
