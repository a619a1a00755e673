"""Checks that every way of resetting gradients trains a model to the same weights: a helper clears
by parameter, by module or by optimizer, as the sweep names."""

import torch
from torch import nn

RESET_STYLES = ("params", "module", "optimizer")


def reset(model: nn.Module, optimizer: torch.optim.Optimizer, style: str) -> None:
    if style == "params":
        for p in model.parameters():
            p.grad = None
    elif style == "module":
        model.zero_grad()
    elif style == "optimizer":
        optimizer.zero_grad(set_to_none=False)


def main() -> None:
    data, target = torch.randn(256, 8), torch.randn(256, 1)
    weights = []
    for style in RESET_STYLES:
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        for xb, yb in zip(data.split(32), target.split(32)):
            reset(model, optimizer, style)
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
        weights.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
    for other in weights[1:]:
        torch.testing.assert_close(weights[0], other)


if __name__ == "__main__":
    main()
