"""A meta-learning-looking loop that is not: the model factory runs for every batch of one run."""
import torch
import torch.nn as nn


def build_model(cfg):
    layers = [nn.Linear(cfg["d_in"], cfg["hidden"]), nn.ReLU()]
    for _ in range(cfg["depth"] - 1):
        layers += [nn.Linear(cfg["hidden"], cfg["hidden"]), nn.ReLU()]
    layers.append(nn.Linear(cfg["hidden"], cfg["n_out"]))
    return nn.Sequential(*layers)


def train(cfg, loader, optimizer_state=None):
    optimizer = None
    for epoch in range(cfg["epochs"]):
        for step, (x, y) in enumerate(loader):
            model = build_model(cfg)  # expect: TL003
            if optimizer is None:
                optimizer = torch.optim.SGD(model.parameters(), lr=cfg["lr"])
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")
