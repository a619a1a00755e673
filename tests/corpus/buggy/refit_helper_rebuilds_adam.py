"""Curriculum training of one regressor: every stage calls a helper that builds a fresh Adam over
the model it is given, so the same model loses its Adam moments at each stage."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Regressor(nn.Module):
    def __init__(self, width: int = 64):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(1, width), nn.SiLU(), nn.Linear(width, width), nn.SiLU())
        self.head = nn.Linear(width, 1)

    def forward(self, x):
        return self.head(self.body(x))


def fit(net: nn.Module, x: torch.Tensor, y: torch.Tensor, iters: int = 500) -> float:
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)  # expect: TL004
    for _ in range(iters):
        optimizer.zero_grad()
        loss = F.mse_loss(net(x), y)
        loss.backward()
        optimizer.step()
    return loss.item()


def noisy_sine(n: int, noise: float):
    x = torch.rand(n, 1) * 6 - 3
    return x, torch.sin(x) + noise * torch.randn_like(x)


regressor = Regressor()
for noise in torch.linspace(0.5, 0.0, steps=6).tolist():
    x, y = noisy_sine(1024, noise)
    print(f"noise {noise:.2f}: loss {fit(regressor, x, y):.4f}")
