"""Model and optimizer rebuilt inside the epoch loop, so training restarts every epoch."""
import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self, d_in=32, n_classes=4):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, 128), nn.ReLU(), nn.Linear(128, n_classes))

    def forward(self, x):
        return self.net(x)


def run_epoch(loader, lr):
    model = Classifier()  # expect: TL003
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)  # expect: TL004
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    return model


def main(loader, epochs=20):
    for epoch in range(epochs):
        model = run_epoch(loader, lr=1e-3)
        torch.save(model.state_dict(), f"epoch{epoch}.pt")
