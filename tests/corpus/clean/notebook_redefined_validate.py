"""Comparing architectures in a notebook export: `validate` is redefined for the second experiment
and switches to eval mode; the first one is only ever given a model without mode-dependent layers."""

import torch
from torch import nn


def training_loop(n_epochs, optimizer, model, loss_fn, train_loader):
    model.train()
    for _ in range(n_epochs):
        for imgs, labels in train_loader:
            loss = loss_fn(model(imgs), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


def validate(model, val_loader):
    with torch.no_grad():
        for imgs, _labels in val_loader:
            print(model(imgs).argmax(dim=1))


model = nn.Sequential(nn.Flatten(), nn.Linear(3072, 64), nn.Tanh(), nn.Linear(64, 2))
training_loop(10, torch.optim.SGD(model.parameters(), lr=1e-2), model, nn.CrossEntropyLoss(), train_loader)
validate(model, val_loader)


def validate(model, val_loader):  # noqa: F811 - the notebook redefines it
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for imgs, labels in val_loader:
            predicted = model(imgs).argmax(dim=1)
            total += labels.shape[0]
            correct += int((predicted == labels).sum())
    return correct / total


accuracies = {}
model = nn.Sequential(nn.Conv2d(3, 16, 3), nn.Dropout2d(p=0.4), nn.Flatten(), nn.LazyLinear(2))
training_loop(10, torch.optim.SGD(model.parameters(), lr=1e-2), model, nn.CrossEntropyLoss(), train_loader)
accuracies["dropout"] = validate(model, val_loader)

model = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.Flatten(), nn.LazyLinear(2))
training_loop(10, torch.optim.SGD(model.parameters(), lr=1e-2), model, nn.CrossEntropyLoss(), train_loader)
accuracies["batch_norm"] = validate(model, val_loader)
