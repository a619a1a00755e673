"""The twin of clean/rollout_and_ensemble_without_mode_layers.py with dropout in both models: acting
and predicting under no_grad without `.eval()` now runs the dropout, so both are reported."""

import torch
import torch.nn as nn
from torch.distributions import Categorical


class ActorCritic(nn.Module):
    def __init__(self, n_actions):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(4, 32, 8, stride=4), nn.ReLU(), nn.Conv2d(32, 64, 4, stride=2), nn.ReLU())
        self.lin = nn.Linear(9 * 9 * 64, 512)
        self.pi_logits = nn.Linear(512, n_actions)
        self.value = nn.Linear(512, 1)
        self.drop = nn.Dropout(0.1)

    def forward(self, obs):
        h = self.drop(torch.relu(self.lin(self.conv(obs).flatten(1))))
        return Categorical(logits=self.pi_logits(h)), self.value(h).squeeze(-1)


class PPOTrainer:
    def __init__(self, envs, n_actions):
        self.envs = envs
        self.model = ActorCritic(n_actions)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=2.5e-4)

    def sample(self, steps):
        rollout = []
        with torch.no_grad():
            for t in range(steps):
                obs = torch.as_tensor(self.envs.obs, dtype=torch.float32) / 255.0
                pi, v = self.model(obs)  # expect: TL005
                action = pi.sample()
                rollout.append((obs, action, pi.log_prob(action), v, self.envs.step(action)))
        return rollout

    def update(self, rollout):
        for obs, action, old_log_prob, old_value, reward in rollout:
            pi, value = self.model(obs)
            ratio = torch.exp(pi.log_prob(action) - old_log_prob)
            loss = -(ratio * (reward - old_value)).mean() + 0.5 * (reward - value).pow(2).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

    def run(self, updates):
        for update in range(updates):
            self.update(self.sample(128))


def fit_ensemble(X, y, n_networks=10, hidden=100):
    models = []
    criterion = nn.MSELoss()
    for k in range(n_networks):
        model = nn.Sequential(
            nn.Linear(1, hidden), nn.ReLU() if k < n_networks // 2 else nn.Tanh(), nn.Dropout(0.2), nn.Linear(hidden, 1)
        )
        models.append(model)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-5)
        for t in range(1000):
            loss = criterion(model(X), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return models


def dense_prediction(models, X_new):
    predictions = []
    for model in models:
        with torch.no_grad():
            predictions.append(model(X_new))  # expect: TL005
    return torch.stack(predictions)


X = torch.linspace(-1, 1, 100).unsqueeze(1)
y = X.pow(3) + 0.1 * torch.randn_like(X)
ensemble = fit_ensemble(X, y)
relu_variance = dense_prediction(ensemble[:5], torch.linspace(-4, 4, 1001).unsqueeze(1)).var(0)
tanh_variance = dense_prediction(ensemble[5:], torch.linspace(-4, 4, 1001).unsqueeze(1)).var(0)
