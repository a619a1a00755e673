"""A universal perturbation trained with Adam, whose optimizer is rebuilt every step over the same tensor."""

import torch
import torch.nn.functional as F


def train_perturbation(model, loader, steps=500, eps=8 / 255):
    model.eval()
    delta = torch.zeros(1, 3, 32, 32, requires_grad=True)
    batches = iter(loader)
    for step in range(steps):
        optimizer = torch.optim.Adam([delta], lr=1e-2)  # expect: TL004
        x, y = next(batches)
        optimizer.zero_grad()
        loss = -F.cross_entropy(model(x + delta), y)
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            delta.clamp_(-eps, eps)
    return delta.detach()
