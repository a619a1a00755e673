"""One epoch function for both phases, switching the mode and autograd on its phase argument; and
a small MLP without dropout or batch norm whose evaluation needs no mode switch."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def run_epoch(model, loader, optimizer, device, train: bool):
    model.train(train)
    total = 0.0
    with torch.set_grad_enabled(train):
        for images, labels in loader:
            loss = F.cross_entropy(model(images.to(device)), labels.to(device))
            if train:
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            total += loss.item()
    return total / len(loader)


class TinyMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))

    def forward(self, x):
        return self.net(x)


def train_step(model, loader, optimizer):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()


@torch.inference_mode()
def test_step(model, loader):
    return sum((model(x).argmax(1) == y).sum().item() for x, y in loader) / len(loader.dataset)


def main(train_loader, val_loader, device="cuda"):
    model = nn.Sequential(nn.Conv2d(1, 16, 3), nn.BatchNorm2d(16), nn.ReLU(), nn.Flatten(), nn.LazyLinear(10))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for epoch in range(10):
        run_epoch(model, train_loader, optimizer, device, train=True)
        run_epoch(model, val_loader, None, device, train=False)
    mlp = TinyMLP()
    mlp_optimizer = torch.optim.SGD(mlp.parameters(), lr=0.1)
    for epoch in range(10):
        train_step(mlp, train_loader, mlp_optimizer)
        print(test_step(mlp, val_loader))
