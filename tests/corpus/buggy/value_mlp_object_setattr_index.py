"""Critic MLP whose hidden layers are set with `object.__setattr__`, which skips registration:
the optimizer never sees them (and `.to(device)` never moves them)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class CriticMLP(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden_sizes=(256, 256), layer_norm=False, init_w=3e-3):
        super().__init__()
        self.layer_norm = layer_norm
        self.hidden = []  # expect: TL013
        self.norms = []
        width = obs_dim + act_dim
        for idx, size in enumerate(hidden_sizes):
            fc = nn.Linear(width, size)
            nn.init.kaiming_uniform_(fc.weight, nonlinearity="relu")
            fc.bias.data.zero_()
            object.__setattr__(self, "hidden{}".format(idx), fc)
            self.hidden.append(fc)
            if layer_norm:
                norm = nn.LayerNorm(size)
                nn.Module.__setattr__(self, "norm{}".format(idx), norm)
                self.norms.append(norm)
            width = size
        self.q_out = nn.Linear(width, 1)
        self.q_out.weight.data.uniform_(-init_w, init_w)

    def forward(self, obs, act):
        h = torch.cat([obs, act], dim=-1)
        for idx, fc in enumerate(self.hidden):
            h = fc(h)
            if self.layer_norm:
                h = self.norms[idx](h)
            h = F.relu(h)
        return self.q_out(h)


def soft_update(target, source, tau=0.005):
    for t, s in zip(target.parameters(), source.parameters()):
        t.data.mul_(1 - tau).add_(tau * s.data)


def critic_step(critic, target, optimizer, batch, gamma=0.99):
    obs, act, rew, next_obs, next_act, done = batch
    with torch.no_grad():
        target_q = rew + gamma * (1 - done) * target(next_obs, next_act)
    loss = F.mse_loss(critic(obs, act), target_q)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    soft_update(target, critic)
    return loss.item()
