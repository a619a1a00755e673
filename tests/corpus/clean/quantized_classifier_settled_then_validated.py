import torch

from quant.layers import settle_model


def validate(loader, model, criterion):
    settle_model(model)
    model.eval()
    total = 0.0
    with torch.no_grad():
        for images, target in loader:
            output = model(images)
            total += criterion(output, target).item()
    return total / len(loader)
