"""A deep ensemble: a plain Python wrapper around several independently trained networks."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def make_member(d_in, n_classes, width):
    return nn.Sequential(nn.Linear(d_in, width), nn.ReLU(), nn.Linear(width, n_classes))


class DeepEnsemble:
    """Not an nn.Module on purpose: each member has its own optimizer and is saved separately."""

    def __init__(self, d_in, n_classes, widths=(128, 256, 512), lr=1e-3):
        self.members = [make_member(d_in, n_classes, w) for w in widths]
        self.optimizers = [torch.optim.Adam(m.parameters(), lr=lr) for m in self.members]
        self.widths = list(widths)

    def train_epoch(self, loader):
        stats = [0.0] * len(self.members)
        for model in self.members:
            model.train()
        for x, y in loader:
            for i, (model, opt) in enumerate(zip(self.members, self.optimizers)):
                opt.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                stats[i] += loss.item()
        return [s / len(loader) for s in stats]

    @torch.no_grad()
    def predict_proba(self, x):
        for model in self.members:
            model.eval()
        return torch.stack([F.softmax(model(x), dim=-1) for model in self.members]).mean(0)

    def save(self, prefix):
        for w, model in zip(self.widths, self.members):
            torch.save(model.state_dict(), f"{prefix}_w{w}.pt")


class EpisodeLoss(nn.Module):
    """Sums per-step losses of one episode, then backpropagates once."""

    def __init__(self, gamma=0.99):
        super().__init__()
        self.gamma = gamma

    def forward(self, log_probs, rewards):
        returns, g = [], 0.0
        for r in reversed(rewards):
            g = r + self.gamma * g
            returns.insert(0, g)
        steps = []
        for lp, ret in zip(log_probs, returns):
            steps.append(-lp * ret)
        return torch.stack(steps).sum()


def fit(ensemble, loader, epochs=20):
    for epoch in range(epochs):
        print(epoch, ensemble.train_epoch(loader))
