"""A residual MLP whose blocks are appended to a plain list, with a hand-made trainable tensor."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ResidualMLP(nn.Module):
    def __init__(self, dim, depth=6, n_out=1):
        super().__init__()
        self.blocks = []  # expect: TL013
        for _ in range(depth):
            self.blocks.append(nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim), nn.GELU()))
        self.gates = torch.zeros(depth, requires_grad=True)  # expect: TL013
        self.head = nn.Linear(dim, n_out)

    def forward(self, x):
        for gate, block in zip(self.gates.sigmoid(), self.blocks):
            x = x + gate * block(x)
        return self.head(x)


class Regressor:
    def __init__(self, dim, lr=1e-3):
        self.model = ResidualMLP(dim)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.running_loss = 0.0

    def step(self, x, y):
        self.model.train()
        self.optimizer.zero_grad()
        loss = F.mse_loss(self.model(x).squeeze(-1), y)
        loss.backward()
        self.optimizer.step()
        self.running_loss += loss.item()

    def fit(self, loader, epochs=10):
        for epoch in range(epochs):
            for x, y in loader:
                self.step(x, y)
            print(f"epoch {epoch}: loss {self.running_loss / len(loader):.4f}")
            self.running_loss = 0.0
