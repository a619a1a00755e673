"""A deep ensemble for predictive uncertainty: five regressors, each trained by the same helper,
which builds an Adam over the parameters of the member it is given."""

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


def fit(net: nn.Module, x: torch.Tensor, y: torch.Tensor, iters: int = 500) -> nn.Module:
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    for _ in range(iters):
        optimizer.zero_grad()
        F.mse_loss(net(x), y).backward()
        optimizer.step()
    return net


x_train = torch.rand(512, 1) * 6 - 3
y_train = torch.sin(x_train) + 0.1 * torch.randn_like(x_train)
members = [Regressor(width=w) for w in (32, 48, 64, 96, 128)]
for member in members:
    fit(member, x_train, y_train)

x_grid = torch.linspace(-4, 4, 200)[:, None]
with torch.no_grad():
    preds = torch.stack([m(x_grid) for m in members])
print(preds.mean(0).squeeze()[:5], preds.std(0).squeeze()[:5])
