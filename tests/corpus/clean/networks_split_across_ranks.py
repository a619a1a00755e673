"""Ranks share the work of training many small independent networks (a bootstrap ensemble): each
rank trains its own slice of the networks on the whole dataset, and only the validation scores
are gathered. No model is shared, so no rank should read a shard."""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def make_net() -> nn.Module:
    return nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1))


def fit(net: nn.Module, loader: DataLoader, epochs: int) -> None:
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    for _ in range(epochs):
        for x, y in loader:
            opt.zero_grad()
            F.mse_loss(net(x).squeeze(-1), y).backward()
            opt.step()


@torch.no_grad()
def score(net: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.mse_loss(net(x).squeeze(-1), y)


def main(total_nets: int = 32, epochs: int = 3) -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    train = TensorDataset(torch.randn(2000, 16), torch.randn(2000))
    x_val, y_val = torch.randn(500, 16), torch.randn(500)
    loader = DataLoader(train, batch_size=50, shuffle=True)
    mine = range(rank * total_nets // world, (rank + 1) * total_nets // world)
    scores = torch.zeros(total_nets)
    for index in mine:
        net = make_net()
        fit(net, loader, epochs)
        scores[index] = score(net, x_val, y_val)
    dist.all_reduce(scores)
    if rank == 0:
        os.makedirs("out", exist_ok=True)
        torch.save(scores, "out/ensemble_scores.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
