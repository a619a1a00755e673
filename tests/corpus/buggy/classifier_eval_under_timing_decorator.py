"""CIFAR-style classifier whose evaluation helpers share one project decorator that only times them:
the decorator leaves autograd on, so evaluation records a graph."""

import functools
import time

import torch
from torch import nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def timed(fn):
    """Log how long ``fn`` took."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        result = fn(*args, **kwargs)
        print(f"{fn.__name__} took {time.perf_counter() - start:.1f}s")
        return result

    return wrapper


def build_model(num_classes=10):
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(64, num_classes),
    )


@timed
def evaluate(model, loader, device):
    model.eval()
    correct = seen = 0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        correct += (model(images).argmax(dim=1) == labels).sum().item()  # expect: TL006
        seen += labels.numel()
    return correct / max(seen, 1)


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    tfm = transforms.ToTensor()
    train_loader = DataLoader(
        datasets.CIFAR10("data", train=True, download=True, transform=tfm), batch_size=128, shuffle=True
    )
    val_loader = DataLoader(datasets.CIFAR10("data", train=False, download=True, transform=tfm), batch_size=256)
    model = build_model().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(20):
        model.train()
        for images, labels in train_loader:
            images, labels = images.to(device), labels.to(device)
            optimizer.zero_grad()
            loss = criterion(model(images), labels)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: val accuracy {evaluate(model, val_loader, device):.3f}")


if __name__ == "__main__":
    main()
