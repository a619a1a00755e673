"""One epoch runner for every phase; the training flag is computed from the phase name."""

import torch
from torch import nn


def run_one_epoch(model, loader, optimizer, criterion, phase="train"):
    assert phase in ("train", "val", "test")
    training = phase == "train"
    model.train(training)
    correct, seen = 0, 0
    for images, labels in loader:
        logits = model(images)
        loss = criterion(logits, labels)
        if training:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        correct += (logits.argmax(1) == labels).sum().item()
        seen += labels.numel()
    return correct / seen


def main(model, loaders, epochs=90):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    for _ in range(epochs):
        run_one_epoch(model, loaders["train"], optimizer, criterion, phase="train")
        with torch.no_grad():
            accuracy = run_one_epoch(model, loaders["val"], optimizer, criterion, phase="val")
        print(f"val accuracy {accuracy:.3f}")
    with torch.no_grad():
        print(run_one_epoch(model, loaders["test"], optimizer, criterion, phase="test"))
