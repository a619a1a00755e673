"""Fits linear-regression weights held in a bare parameter to a synthetic data set."""

import torch

torch.manual_seed(0)
features = torch.randn(256, 5)
true_weights = torch.tensor([1.5, -2.0, 0.3, 0.0, 4.2])
targets = features @ true_weights + 0.1 * torch.randn(256)

weights = torch.nn.Parameter(torch.zeros(5))
optimizer = torch.optim.SGD([weights], lr=0.05)
for epoch in range(200):
    loss = ((features @ weights - targets) ** 2).mean()
    loss.backward()
    optimizer.step()  # expect: TL001

print("fitted", weights.detach())
