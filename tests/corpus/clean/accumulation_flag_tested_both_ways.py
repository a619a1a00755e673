"""Tests of a step loop that clears gradients unless told not to: the run that turns clearing
off is the one the test expects to fail."""

import pytest
import torch
from torch import nn


class StrictOptimizer(torch.optim.SGD):
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None and p.grad.abs().max() > 1e3:
                    raise RuntimeError("stale gradients")
        return super().step(closure)


def run_steps(model, batches, optimizer=None, clear_every_step=True):
    for inputs in batches:
        if optimizer is not None and clear_every_step:
            optimizer.zero_grad()
        model(inputs).pow(2).sum().backward()
        if optimizer is not None:
            optimizer.step()


def test_clearing_keeps_gradients_small():
    model = nn.Linear(4, 4)
    run_steps(model, [torch.full((2, 4), 30.0)] * 4, StrictOptimizer(model.parameters(), lr=0.0))


def test_skipping_the_clear_is_caught():
    model = nn.Linear(4, 4)
    with pytest.raises(RuntimeError):
        run_steps(model, [torch.full((2, 4), 30.0)] * 40, StrictOptimizer(model.parameters(), lr=0.0), False)
