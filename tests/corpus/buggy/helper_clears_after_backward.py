"""A per-batch helper that clears the gradients right after computing them."""
import torch
import torch.nn as nn


def optimize(optimizer, loss, clip=None, params=None):
    loss.backward()
    optimizer.zero_grad()  # expect: TL002
    if clip is not None:
        nn.utils.clip_grad_norm_(params, clip)
    optimizer.step()


def train(model, loader, epochs=10):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        model.train()
        for x, y in loader:
            loss = criterion(model(x), y)
            optimize(optimizer, loss, clip=5.0, params=model.parameters())
        print("epoch", epoch, "done")
