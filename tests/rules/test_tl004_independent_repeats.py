"""TL004 and a loop named for iterations that repeats whole runs: each call of the loop's body builds
a model (any class, even one picked at run time) and then its optimizer, and trains it through
epochs of batches. A step holds no loop of steps, so the name is read as a count of repeats and
the fresh model decides (runs.RunAnalysis._holds_whole_fresh_runs)."""

from expect_markers import check

_EXPERIMENT = """
import importlib
import torch

def fit(model, optimizer, loader, epochs):
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
    return evaluate(model)

def experiment(cfg, repeat_index):
    model = {build}
    model.to(cfg.device)
    optimizer = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), cfg.lr){marker}
    return fit(model, optimizer, cfg.loader, cfg.epochs)

def main(cfg):
    scores = []
    for it in range(cfg.iterations):
        scores.append(experiment(cfg, it))
    return sum(scores) / len(scores)
"""


def test_a_model_class_picked_at_run_time_makes_each_iteration_its_own_run(lint):
    check(lint, _EXPERIMENT.format(build="importlib.import_module(cfg.arch).Model(cfg)", marker=""), "TL004")


def test_an_optimizer_over_a_model_kept_across_iterations_is_still_reported(lint):
    # The model comes from the caller's configuration object: the same one every iteration.
    findings = check(lint, _EXPERIMENT.format(build="cfg.model", marker="  # expect: TL004"), "TL004")
    assert "`torch.optim.Adam(...)` builds a new optimizer in every iteration of the loop at line 21" in (
        findings[0].message
    )


def test_an_epoch_loop_that_rebuilds_the_model_per_phase_stays_reported(lint):
    # Named for epochs, two loops down (phases of batches): still one run, the model restarts.
    check(
        lint,
        """
import torch
from torch import nn

for epoch in range(30):
    model = nn.Linear(8, 1)  # expect: TL003
    optimizer = torch.optim.Adam(model.parameters())  # expect: TL004
    for phase in ("train", "val"):
        for x, y in loaders[phase]:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
""",
        "TL003",
        "TL004",
    )
