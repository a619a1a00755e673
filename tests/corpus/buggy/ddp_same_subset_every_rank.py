"""Data-parallel training that shards the dataset by hand: each rank keeps a contiguous slice of
the indices -- but the same slice on every rank, so the ranks replay one another."""

import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Subset, TensorDataset


def main() -> None:
    dist.init_process_group("gloo")
    world = dist.get_world_size()
    data = TensorDataset(torch.randn(4096, 32), torch.randint(0, 10, (4096,)))
    slice_len = len(data) // world
    data = Subset(data, range(slice_len))
    train_loader = DataLoader(data, batch_size=64, shuffle=True, drop_last=True)  # expect: TL021

    model = DistributedDataParallel(nn.Linear(32, 10))
    optimizer = torch.optim.AdamW(model.parameters(), lr=float(os.environ.get("LR", "1e-3")))
    for epoch in range(5):
        for x, y in train_loader:
            optimizer.zero_grad(set_to_none=True)
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
