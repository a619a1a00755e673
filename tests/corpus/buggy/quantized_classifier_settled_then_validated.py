import torch

from quant.layers import settle_model


def validate(loader, model, criterion):
    settle_model(model)
    model.eval()
    total = 0.0
    for images, target in loader:
        output = model(images)  # expect: TL006
        total += criterion(output, target).item()
    return total / len(loader)
