"""Gradients cleared once before training; inference_mode wraps a call to the update helper."""
import torch
import torch.nn as nn


def update(model, optimizer, batch, criterion):
    x, y = batch
    loss = criterion(model(x), y)
    loss.backward()  # expect: TL016
    optimizer.step()  # expect: TL001
    return loss.item()


def calibrate(model, optimizer, calib_loader, criterion):
    """Adapt to the deployment domain on a few batches."""
    with torch.inference_mode():
        for batch in calib_loader:
            update(model, optimizer, batch, criterion)


def train(model, loader, epochs=10, lr=0.01):
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    optimizer.zero_grad()
    for epoch in range(epochs):
        model.train()
        for x, y in loader:
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()  # expect: TL001
        print(f"epoch {epoch}: loss {loss.item():.4f}")
    return model
