"""Chance-level baseline for a probing study, next to the best trained probe reloaded from its checkpoint:
that one is a real evaluation, and it runs with autograd on."""

import torch
from torch import nn


class Probe(nn.Module):
    def __init__(self, width, classes=10):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(128, width), nn.GELU(), nn.Linear(width, classes))

    def forward(self, x):
        return self.body(x)


def validate(probe, val_loader):
    probe.eval()
    correct = total = 0
    for features, labels in val_loader:
        logits = probe(features)  # expect: TL006
        correct += (logits.argmax(-1) == labels).sum().item()
        total += labels.numel()
    return correct / total


def main():
    val_loader = torch.load("val_features.pt")
    for width in (64, 256, 1024):
        print(f"width {width}: untrained accuracy {validate(Probe(width), val_loader):.3f}")
    wide = Probe(4096)
    wide.load_state_dict(torch.load("probe_4096.pt", map_location="cpu"))
    print(f"width 4096: trained accuracy {validate(wide, val_loader):.3f}")


if __name__ == "__main__":
    main()
