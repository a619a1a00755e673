"""Post-training quantization check of a trained classifier: the shared helper compares the
wrapped model with the original on validation batches, with autograd recording both."""

import copy

import torch
from torch import nn


class RoundedWeights(nn.Module):
    def __init__(self, module, bits=8):
        super().__init__()
        self.module = module
        levels = 2 ** (bits - 1) - 1
        with torch.no_grad():
            for p in module.parameters():
                scale = p.abs().max() / levels
                p.copy_(torch.round(p / scale) * scale)

    def forward(self, x):
        return self.module(x)


def _evaluate_rounding(model, inputs, bits):
    wrapped = RoundedWeights(copy.deepcopy(model), bits)
    wrapped.eval()
    return (wrapped(inputs) - model(inputs)).abs().max().item()  # expect: TL006


def main():
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 10))
    model.load_state_dict(torch.load("mnist.pt"))
    model.eval()
    val_loader = torch.utils.data.DataLoader(torch.load("val.pt"), batch_size=256)
    for images, _ in val_loader:
        print(_evaluate_rounding(model, images, 8))


if __name__ == "__main__":
    main()
