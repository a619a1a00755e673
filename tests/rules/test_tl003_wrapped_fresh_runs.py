"""TL003/TL004 and a loop whose body calls a function that builds its model, wraps it
(``nn.DataParallel(net)``, ``torch.compile(net)``), builds an optimizer over the wrapper and trains it
to the end through a training function of another file: every call is a run of its own. A wrapper
holds the parameters of what it wraps, so it is as fresh as that model (fresh_runs._origin_sources);
a wrapper of a model kept across iterations, or a model rebuilt inside an epoch loop, is still
reported."""

import pytest
from expect_markers import check
from project_helpers import write

from torchlint.engine.lint import lint_file
from torchlint.engine.rule import all_rules

# The training loop lives in another file of the project: its loop is not visible at the call.
_TRAINING = """
import torch


def fit(loader, model, optimizer, num_iterations):
    batches = iter(loader)
    done = 0
    while done < num_iterations:
        images, labels = next(batches)
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(images), labels).backward()
        optimizer.step()
        done += 1
"""

_NETS = """
from torch import nn


class Perturbation(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.delta = nn.Parameter(nn.init.uniform_(torch.empty(3, size, size), -0.01, 0.01))

    def forward(self, x):
        return x + self.delta
"""


@pytest.fixture
def lint(tmp_path):
    """Lint ``source`` as ``attack.py`` of a project holding the network and the training loop."""

    def run(source: str, *codes: str) -> list:
        write(tmp_path, {"training.py": _TRAINING, "nets.py": _NETS, "attack.py": source})
        findings = lint_file(str(tmp_path / "attack.py"), [all_rules()[c] for c in codes]).findings
        return sorted(findings, key=lambda f: (f.line, f.column))

    return run


_RUNS = """
import numpy as np
import torch
from torch import nn
from nets import Perturbation
from training import fit


def attack(run_index, args, loader):
    perturbation = Perturbation(args.size){model_marker}
    victim = nn.Sequential(nn.Conv2d(3, 8, 3), nn.Flatten(), nn.LazyLinear(10))
    victim.eval()
    attacked = nn.Sequential(perturbation, victim){model_marker}
    attacked = {wrap}
    optimizer = torch.optim.Adam(attacked.parameters(), lr=args.lr){optimizer_marker}
    fit(loader, attacked, optimizer, args.iterations)
    np.save(f"delta_{{run_index}}.npy", perturbation.delta.detach().numpy())


def main(args, loader):
    for i in range(args.count):
        attack(i, args, loader)
"""


@pytest.mark.parametrize("wrap", ["nn.DataParallel(attacked, device_ids=[0, 1])", "torch.compile(attacked)"])
def test_a_wrapped_model_built_per_call_of_a_whole_run_is_not_reported(lint, wrap):
    check(lint, _RUNS.format(wrap=wrap, model_marker="", optimizer_marker=""), "TL003", "TL004")


def test_a_wrapper_of_a_model_kept_across_iterations_is_still_reported(lint):
    # The wrapped model is the caller's, the same every iteration: its training continues.
    source = """
import torch
from torch import nn
from training import fit


def attack(model, loader, args):
    attacked = nn.DataParallel(model)
    optimizer = torch.optim.Adam(attacked.parameters(), lr=args.lr)  # expect: TL004
    fit(loader, attacked, optimizer, args.iterations)


def main(model, loader, args):
    for i in range(args.count):
        attack(model, loader, args)
"""
    findings = check(lint, source, "TL003", "TL004")
    assert findings[0].message.startswith("`torch.optim.Adam(...)` builds a new optimizer in every iteration")
    assert "through the call at line 15" in findings[0].message


def test_a_wrapped_model_rebuilt_per_shard_inside_the_epoch_loop_is_still_reported(lint):
    source = """
import torch
from torch import nn
from training import fit

for epoch in range(args.epochs):
    for shard in shards:
        net = nn.DataParallel(nn.Linear(64, 10))  # expect: TL003
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)  # expect: TL004
        fit(shard, net, optimizer, 100)
"""
    findings = check(lint, source, "TL003", "TL004")
    assert "the loop at line 7 (`for shard in shards`)" in findings[0].message
