"""A VQ-style autoencoder with a straight-through rounding Function and a sigmoid decoder."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class RoundSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output


class QuantAE(nn.Module):
    def __init__(self, d=784, code=32, levels=8):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(d, 256), nn.ReLU(), nn.Linear(256, code), nn.Sigmoid())
        self.dec = nn.Sequential(nn.Linear(code, 256), nn.ReLU(), nn.Linear(256, d), nn.Sigmoid())
        self.levels = levels

    def forward(self, x):
        z = self.enc(x.view(x.size(0), -1))
        zq = RoundSTE.apply(z * (self.levels - 1)) / (self.levels - 1)
        return self.dec(zq), z


def train(model, loader, epochs=20, device="cpu"):
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        model.train()
        total = 0.0
        for x, _ in loader:
            x = x.to(device)
            recon, z = model(x)
            loss = F.binary_cross_entropy(recon, x.view(x.size(0), -1), reduction="sum") / x.size(0)
            loss = loss + 1e-3 * z.pow(2).sum(1).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(f"epoch {epoch}: loss {total / len(loader):.2f}")
    return model
