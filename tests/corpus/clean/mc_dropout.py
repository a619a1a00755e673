"""A regression net whose dropout stays on at test time on purpose (Monte-Carlo dropout)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MCDropoutRegressor(nn.Module):
    def __init__(self, d_in, hidden=64, p=0.1):
        super().__init__()
        self.l1 = nn.Linear(d_in, hidden)
        self.l2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 1)
        self.p = p

    def forward(self, x):
        # Dropout is kept on in eval mode on purpose: every forward is a posterior sample.
        x = F.dropout(F.relu(self.l1(x)), p=self.p, training=True)
        x = F.dropout(F.relu(self.l2(x)), p=self.p, training=True)
        return self.out(x).squeeze(-1)


def fit(model, X, y, epochs=200, lr=1e-2):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=1e-5)
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(X.size(0))
        for idx in perm.split(32):
            optimizer.zero_grad()
            loss = F.mse_loss(model(X[idx]), y[idx])
            loss.backward()
            optimizer.step()
    return model


@torch.no_grad()
def predict_with_uncertainty(model, X, samples=50):
    model.eval()
    draws = torch.stack([model(X) for _ in range(samples)])
    return draws.mean(0), draws.std(0)


if __name__ == "__main__":
    X = torch.linspace(-3, 3, 256).unsqueeze(1)
    y = torch.sin(X).squeeze(1) + 0.1 * torch.randn(256)
    net = fit(MCDropoutRegressor(1), X, y)
    mean, std = predict_with_uncertainty(net, torch.linspace(-5, 5, 100).unsqueeze(1))
    print(mean[:5], std[:5])
