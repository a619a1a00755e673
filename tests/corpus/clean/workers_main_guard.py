"""CIFAR-10 training script: the worker DataLoaders are built and iterated under the main guard."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

MEAN, STD = (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Linear(128 * 8 * 8, 10)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


def get_loaders(batch_size, workers):
    train_tf = transforms.Compose([transforms.RandomCrop(32, padding=4), transforms.RandomHorizontalFlip(),
                                   transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
    test_tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize(MEAN, STD)])
    train = datasets.CIFAR10("data", train=True, download=True, transform=train_tf)
    test = datasets.CIFAR10("data", train=False, transform=test_tf)
    return (DataLoader(train, batch_size=batch_size, shuffle=True, num_workers=workers, pin_memory=True),
            DataLoader(test, batch_size=512, num_workers=workers))


def test(model, loader, device):
    model.eval()
    loss = correct = 0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            out = model(x)
            loss += F.cross_entropy(out, y, reduction="sum").item()
            correct += out.argmax(1).eq(y).sum().item()
    n = len(loader.dataset)
    print(f"test: loss {loss / n:.4f} acc {correct / n:.4f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    train_loader, test_loader = get_loaders(128, args.workers)
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    for epoch in range(args.epochs):
        model.train()
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
        test(model, test_loader, device)
