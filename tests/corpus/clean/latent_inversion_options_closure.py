"""Invert a frozen decoder: find the latent code that reproduces a target image.

The line-search optimizer (a project module) takes its closure inside an options dict
(``step(options=...)``) and re-evaluates it, backward included, during the line search; the
closure clears the latent's gradient before each evaluation. The Adam branch clears after
each step.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from linesearch import LineSearchOptimizer


class Decoder(nn.Module):
    def __init__(self, latent_dim=16, size=8):
        super().__init__()
        self.size = size
        self.net = nn.Sequential(nn.Linear(latent_dim, 64), nn.ReLU(), nn.Linear(64, size * size))

    def forward(self, z):
        return torch.tanh(self.net(z)).view(-1, 1, self.size, self.size)


def invert(decoder, target, iterations=30, line_search=True):
    decoder.requires_grad_(False)
    z = torch.zeros(target.shape[0], 16, requires_grad=True)
    if line_search:
        optimizer = LineSearchOptimizer([z], lr=1.0)
    else:
        optimizer = torch.optim.Adam([z], lr=0.05)
    for it in range(iterations):
        if line_search:
            def reconstruction():
                optimizer.zero_grad()
                return F.mse_loss(decoder(z), target) + 1e-3 * z.pow(2).sum()

            settings = {"closure": reconstruction, "max_ls": 8}
            loss = optimizer.step(options=settings)
        else:
            loss = F.mse_loss(decoder(z), target) + 1e-3 * z.pow(2).sum()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        if it % 10 == 0:
            print(f"iter {it}: loss {loss.item():.4f}")
    return z.detach()


if __name__ == "__main__":
    torch.manual_seed(0)
    decoder = Decoder()
    target = decoder(torch.randn(2, 16)).detach()
    print(invert(decoder, target).shape)
