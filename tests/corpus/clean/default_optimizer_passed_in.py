"""Progressive unfreezing: one optimizer over the whole network, handed to each epoch's pass."""

import torch
from torch import nn
from torch.nn import functional as F


def run_epoch(net: nn.Module, loader, optimizer=None, lr=1e-3):
    # A caller without its own optimizer gets a fresh AdamW for this one pass.
    if optimizer is None:
        optimizer = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=0.01)
    net.train()
    for tokens, labels in loader:
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(net(tokens), labels).backward()
        optimizer.step()


def fit(net: nn.Module, loader, epochs: int):
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=0.01)
    for epoch in range(epochs):
        for depth, block in enumerate(net.blocks):
            block.requires_grad_(depth >= len(net.blocks) - 1 - epoch)
        run_epoch(net, loader, optimizer)
