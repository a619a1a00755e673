"""A GAN step whose backward helper is bound with functools.partial, a meta-learned policy whose
per-task context tensor is reset by hand, and a model that keeps an index of adapter modules it
installed into the wrapped network."""

import functools

import torch
import torch.nn as nn


def backward_pass(mixed, objective, optimizer, slot):
    if mixed:
        with amp.scale_loss(objective, optimizer, slot) as scaled:  # noqa: F821 (apex, when installed)
            scaled.backward()
    else:
        objective.backward()


def install(root, dotted, module):
    *outer, name = dotted.split(".")
    owner = root
    for part in outer:
        owner = getattr(owner, part)
    setattr(owner, name, module)


class LowRankAdapter(nn.Module):
    def __init__(self, base, rank=4):
        super().__init__()
        self.base = base
        self.down = nn.Linear(base.in_features, rank, bias=False)
        self.up = nn.Linear(rank, base.out_features, bias=False)

    def forward(self, x):
        return self.base(x) + self.up(self.down(x))


class AdaptedNetwork(nn.Module):
    def __init__(self, net, paths):
        super().__init__()
        self.net = net
        self.adapters = dict()
        for path in paths:
            adapter = LowRankAdapter(net.get_submodule(path))
            install(net, path, adapter)
            self.adapters[path] = adapter

    def forward(self, x):
        return self.net(x)


class TaskContextPolicy(nn.Module):
    def __init__(self, n_obs, n_act, n_context=2):
        super().__init__()
        self.context = torch.zeros(n_context, requires_grad=True)
        self.head = nn.Sequential(nn.Linear(n_obs + n_context, 64), nn.Tanh(), nn.Linear(64, n_act))

    def forward(self, obs):
        ctx = self.context.expand(obs.shape[:-1] + self.context.shape)
        return self.head(torch.cat([obs, ctx], dim=-1))

    def reset_context(self):
        with torch.no_grad():
            self.context[:] = 0


class GanTrainer:
    def __init__(self, gen, disc, mixed=False):
        self.gen, self.disc, self.mixed = gen, disc, mixed
        self.g_opt = torch.optim.Adam(gen.parameters(), lr=2e-4, betas=(0.5, 0.9))
        self.d_opt = torch.optim.Adam(disc.parameters(), lr=2e-4, betas=(0.5, 0.9))

    def step(self, real, latent_dim=128):
        backward = functools.partial(backward_pass, self.mixed)
        z = torch.randn(real.shape[0], latent_dim)

        self.d_opt.zero_grad()
        loss = nn.functional.softplus(self.disc(self.gen(z).detach())).mean()
        loss = loss + nn.functional.softplus(-self.disc(real)).mean()
        backward(loss, self.d_opt, 0)
        self.d_opt.step()

        self.g_opt.zero_grad()
        g_loss = nn.functional.softplus(-self.disc(self.gen(z))).mean()
        backward(g_loss, self.g_opt, 1)
        self.g_opt.step()
        return loss.item(), g_loss.item()
