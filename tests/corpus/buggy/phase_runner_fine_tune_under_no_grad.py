"""One epoch runner for every phase; the fine-tuning pass was pasted into the no-grad block."""

import torch
from torch import nn


def run_one_epoch(model, loader, optimizer, criterion, phase="train"):
    assert phase in ("train", "finetune", "val")
    training = phase != "val"
    model.train(training)
    correct, seen = 0, 0
    for images, labels in loader:
        logits = model(images)
        loss = criterion(logits, labels)
        if training:
            optimizer.zero_grad()
            loss.backward()  # expect: TL016
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
            run_one_epoch(model, loaders["val"], optimizer, criterion, phase="finetune")
        print(f"val accuracy {accuracy:.3f}")
