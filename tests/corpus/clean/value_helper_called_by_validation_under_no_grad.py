"""An actor-critic trainer whose validation scores episodes through a helper of its own, inside a
no-grad block: the helper runs the critic, but nothing records a graph."""

import torch
import torch.nn as nn


class Critic(nn.Module):
    def __init__(self, state_dim, hidden=128):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(state_dim, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, states):
        return self.layers(states).squeeze(-1)


class ActorCriticTrainer:
    def __init__(self, critic, optimizer, rollouts, holdout):
        self.critic = critic
        self.optimizer = optimizer
        self.rollouts = rollouts
        self.holdout = holdout

    def fit(self, epochs):
        for _ in range(epochs):
            for states, returns in self.rollouts:
                loss = (self.critic(states) - returns).pow(2).mean()
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
            print("holdout error", self.validate())

    def estimated_returns(self, states, discount=0.99):
        values = self.critic(states)
        return values * discount

    def validate(self):
        self.critic.eval()
        errors = []
        with torch.no_grad():
            for states, returns in self.holdout:
                errors.append((self.estimated_returns(states) - returns).abs().mean().item())
        self.critic.train()
        return sum(errors) / len(errors)
