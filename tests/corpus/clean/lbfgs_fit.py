"""Fit a small physics-informed network with L-BFGS and a closure."""
import torch
import torch.nn as nn


class PINN(nn.Module):
    def __init__(self, width=32, depth=4):
        super().__init__()
        layers = [nn.Linear(1, width), nn.Tanh()]
        for _ in range(depth - 1):
            layers += [nn.Linear(width, width), nn.Tanh()]
        layers.append(nn.Linear(width, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, t):
        return self.net(t)


def residual(model, t):
    t = t.requires_grad_(True)
    u = model(t)
    du = torch.autograd.grad(u.sum(), t, create_graph=True)[0]
    return du + u  # u' = -u


def fit(steps=50):
    model = PINN()
    t = torch.linspace(0, 2, 200).unsqueeze(1)
    t0 = torch.zeros(1, 1)
    optimizer = torch.optim.LBFGS(model.parameters(), lr=1.0, max_iter=20, history_size=50,
                                  line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        loss = residual(model, t.clone()).pow(2).mean() + (model(t0) - 1.0).pow(2).mean()
        loss.backward()
        return loss

    for step in range(steps):
        loss = optimizer.step(closure)
        if step % 10 == 0:
            print(f"step {step}: loss {loss.item():.2e}")
    model.eval()
    with torch.no_grad():
        pred = model(torch.tensor([[1.0]]))
    print("u(1) =", pred.item(), "exact", torch.exp(torch.tensor(-1.0)).item())
    return model


if __name__ == "__main__":
    fit()
