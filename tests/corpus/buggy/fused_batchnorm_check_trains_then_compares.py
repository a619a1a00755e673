"""Trains a fused batch-norm a few steps, then compares it with torch's: the comparison forgets eval()."""

import torch
from torch import nn

from fused_ops import FusedBatchNorm2d


def report_difference(name, a, b):
    print(f"{name}: max abs difference {(a - b).abs().max().item():.2e}")


def validate_fused_batchnorm(reference, fused, batches, val_batches):
    fused.load_state_dict(reference.state_dict())
    optimizer = torch.optim.SGD([*reference.parameters(), *fused.parameters()], lr=0.1)
    reference.train()
    fused.train()
    for batch in batches:
        optimizer.zero_grad()
        (reference(batch).square().mean() + fused(batch).square().mean()).backward()
        optimizer.step()
    with torch.no_grad():
        for batch in val_batches:
            report_difference("output", reference(batch), fused(batch))  # expect: TL005


if __name__ == "__main__":
    data = torch.load("activations.pt")
    validate_fused_batchnorm(nn.BatchNorm2d(16), FusedBatchNorm2d(16), data["train"], data["val"])
