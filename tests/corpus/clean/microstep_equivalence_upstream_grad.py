"""Checks that a sharded optimizer matches plain SGD when gradients are accumulated over micro-steps.
Both models receive the same random upstream gradient for their outputs; there is no loss."""

import copy

import torch
from torch import nn


def run_pair(reference: nn.Module, candidate: nn.Module, steps: int = 4, micro_steps: int = 3) -> None:
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.05)
    cand_opt = torch.optim.SGD(candidate.parameters(), lr=0.05)
    for _ in range(steps):
        inputs = [torch.randn(8, 16) for _ in range(micro_steps)]
        upstream = [torch.rand(8, 4) - 0.5 for _ in range(micro_steps)]

        ref_opt.zero_grad()
        for k in range(micro_steps):
            ref_out = reference(inputs[k])
            ref_out.backward(upstream[k])
        ref_opt.step()

        cand_opt.zero_grad()
        for k in range(micro_steps):
            cand_out = candidate(inputs[k])
            cand_out.backward(upstream[k])
        cand_opt.step()

        for a, b in zip(reference.parameters(), candidate.parameters()):
            torch.testing.assert_close(a, b)


if __name__ == "__main__":
    base = nn.Linear(16, 4)
    run_pair(base, copy.deepcopy(base))
