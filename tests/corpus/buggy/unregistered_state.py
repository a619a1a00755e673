"""A multi-tower recommender that keeps towers in a dict and a trainable scale as a plain tensor."""
import torch
import torch.nn as nn


class Tower(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(d_in, 2 * d_out), nn.ReLU(), nn.Linear(2 * d_out, d_out))

    def forward(self, x):
        return self.mlp(x)


class TwoTower(nn.Module):
    def __init__(self, features, d_out=64, n_cross=2):
        super().__init__()
        self.towers = {name: Tower(dim, d_out) for name, dim in features.items()}  # expect: TL013
        self.cross = [nn.Linear(d_out, d_out) for _ in range(n_cross)]  # expect: TL013
        self.scale = torch.full((1,), 10.0).requires_grad_()  # expect: TL013
        self.feature_names = list(features)
        self.register_buffer("step", torch.zeros((), dtype=torch.long))
        self.out = nn.Linear(d_out, 1)

    def forward(self, inputs):
        user = self.towers["user"](inputs["user"])
        item = self.towers["item"](inputs["item"])
        for layer in self.cross:
            user = user + torch.relu(layer(user))
        return self.scale * (user * item).sum(-1)


def fit(model, loader, epochs=3):
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.05)
    for epoch in range(epochs):
        for inputs, clicked in loader:
            optimizer.zero_grad()
            loss = nn.functional.binary_cross_entropy_with_logits(model(inputs), clicked.float())
            loss.backward()
            optimizer.step()
