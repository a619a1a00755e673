"""Data-parallel training written by hand: every rank averages its gradients with the others, but
all ranks share one seed and shuffle the whole dataset, so they compute the same batches."""

import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def sync_gradients(model: nn.Module) -> None:
    world = dist.get_world_size()
    for p in model.parameters():
        if p.grad is None:
            continue
        dist.all_reduce(p.grad.data)
        p.grad.data.div_(world)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    torch.manual_seed(args.seed)
    data = TensorDataset(torch.randn(4096, 20), torch.randint(0, 4, (4096,)))
    loader = DataLoader(data, batch_size=128, shuffle=True, drop_last=True)  # expect: TL021
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 4))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(args.epochs):
        for features, target in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(features), target).backward()
            sync_gradients(model)
            optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
