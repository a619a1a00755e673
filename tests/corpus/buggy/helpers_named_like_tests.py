"""Evaluation helpers whose names say "test" (kept in a file named like a test module in the
repository, `tests/helpers.py`): they evaluate a trained model, and are judged like any code."""
import torch
import torch.nn as nn


def train_epoch(model, loader, optimizer, criterion):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()


def test_accuracy(model, loader):
    correct = total = 0
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum().item()  # expect: TL005, TL006
        total += y.numel()
    return correct / total


def run(loaders, epochs=5):
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Dropout(0.2), nn.Linear(256, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        train_epoch(model, loaders["train"], optimizer, criterion)
        print(epoch, test_accuracy(model, loaders["test"]))
