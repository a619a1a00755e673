"""The shared epoch function called under no_grad with the training member: backward without a graph."""

import enum

import torch
from torch import nn


class Phase(enum.Enum):
    TRAIN = 0
    VAL = 1
    TEST = 2


def run_phase(model, optimizer, loader, phase):
    if phase == Phase.TRAIN:
        model.train()
    else:
        model.eval()
    seen, correct = 0, 0
    for features, labels in loader:
        logits = model(features)
        loss = nn.functional.cross_entropy(logits, labels)
        if phase == Phase.TRAIN:
            optimizer.zero_grad()
            loss.backward()  # expect: TL016
            optimizer.step()
        correct += (logits.argmax(1) == labels).sum().item()
        seen += labels.numel()
    return correct / max(seen, 1)


def fit(model, loaders, epochs=10):
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    for _ in range(epochs):
        run_phase(model, optimizer, loaders["train"], Phase.TRAIN)
        with torch.no_grad():
            run_phase(model, optimizer, loaders["val"], phase=Phase.TRAIN)
    with torch.no_grad():
        return run_phase(model, optimizer, loaders["test"], phase=Phase.TEST)
