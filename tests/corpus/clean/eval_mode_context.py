"""Utilities that save and restore the module's mode around evaluation, used inside the training loop."""
import contextlib

import torch
import torch.nn as nn
import torch.nn.functional as F


@contextlib.contextmanager
def evaluating(model: nn.Module):
    """Temporarily put ``model`` in eval mode; restore whatever mode it had before."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


@torch.no_grad()
def validation_loss(model, loader):
    total, n = 0.0, 0
    for x, y in loader:
        total += F.cross_entropy(model(x), y, reduction="sum").item()
        n += y.numel()
    return total / n


def train(model, train_loader, val_loader, epochs=10, lr=3e-4, eval_every=500):
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    step = 0
    best = float("inf")
    for epoch in range(epochs):
        for x, y in train_loader:
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            step += 1
            if step % eval_every == 0:
                with evaluating(model):
                    val = validation_loss(model, val_loader)
                if val < best:
                    best = val
                    torch.save(model.state_dict(), "best.pt")
                print(f"step {step}: train {loss.item():.4f} val {val:.4f}")
    return best
