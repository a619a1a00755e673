"""Accumulates a mean loss over micro-steps without dividing it by the micro-step count."""

import torch
from torch import nn


def run(model: nn.Module, steps: int = 4, micro_steps: int = 3) -> None:
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(steps):
        inputs = [torch.randn(8, 16) for _ in range(micro_steps)]
        targets = [torch.randn(8, 4) for _ in range(micro_steps)]
        opt.zero_grad()
        for k in range(micro_steps):
            out = model(inputs[k])
            loss = nn.functional.mse_loss(out, targets[k])
            loss.backward()  # expect: TL009
        opt.step()


if __name__ == "__main__":
    run(nn.Linear(16, 4))
