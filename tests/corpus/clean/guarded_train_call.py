"""The same training script with its entry point under the main guard: workers re-import it safely."""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--lr", type=float, default=0.01)
    return parser.parse_args()


def get_loaders(root, workers):
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    train_set = datasets.MNIST(root, train=True, download=True, transform=tf)
    test_set = datasets.MNIST(root, train=False, transform=tf)
    train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=workers)
    test_loader = DataLoader(test_set, batch_size=1000, num_workers=workers)
    return train_loader, test_loader


def train(args):
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    train_loader, test_loader = get_loaders("data", args.workers)
    for epoch in range(args.epochs):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
        print(f"epoch {epoch}: {correct / len(test_loader.dataset):.4f}")


if __name__ == "__main__":
    train(get_args())
