"""A regression trainer whose step loop clears gradients only when asked to; the script's
own call asks it not to, so every step applies the sum of all batches so far."""

import torch
from torch import nn


def run_epoch(model, loader, optimizer, loss_fn, clear_every_step=True):
    total = 0.0
    for inputs, targets in loader:
        if clear_every_step:
            optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()  # expect: TL001
        total += loss.item()
    return total / max(len(loader), 1)


def main():
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1))
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
    loader = [(torch.randn(8, 16), torch.randn(8, 1)) for _ in range(20)]
    for epoch in range(5):
        print(epoch, run_epoch(model, loader, optimizer, nn.MSELoss(), clear_every_step=False))


if __name__ == "__main__":
    main()
