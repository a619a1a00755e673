"""Boundary-equilibrium GAN: the balance term k follows the losses but is kept as a plain float."""

import torch
from torch import nn


class AutoEncoder(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.encode = nn.Sequential(nn.Linear(dim, 16), nn.ELU())
        self.decode = nn.Linear(16, dim)

    def forward(self, x):
        return self.decode(self.encode(x))


def train(generator, critic, sample, steps, z_dim=8, gamma=0.5, lambda_k=0.001):
    opt_d = torch.optim.Adam(critic.parameters(), lr=1e-4)
    opt_g = torch.optim.Adam(generator.parameters(), lr=1e-4)
    k = 0.0
    for step in range(steps):
        real = sample()
        critic.zero_grad()
        loss_real = (critic(real) - real).abs().mean()
        fake = generator(torch.randn(real.size(0), z_dim))
        fake_d = fake.detach()
        loss_fake = (critic(fake_d) - fake_d).abs().mean()
        (loss_real - k * loss_fake).backward()
        opt_d.step()

        generator.zero_grad()
        fake = generator(torch.randn(real.size(0), z_dim))
        loss_g = (critic(fake) - fake).abs().mean()
        loss_g.backward()
        opt_g.step()

        k = k + lambda_k * (gamma * loss_real - loss_g)
        k = float(k.detach().cpu().numpy())
        k = min(1.0, max(0.0, k))
        if step % 100 == 0:
            print(f"step {step} k={k:.4f} d={loss_real.item():.4f} g={loss_g.item():.4f}")
    return k
