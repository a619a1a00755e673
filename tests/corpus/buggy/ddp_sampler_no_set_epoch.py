"""DDP training whose DistributedSampler is never told the epoch: the same order every epoch."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main(dataset, epochs=20):
    dist.init_process_group(backend="nccl")
    rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    model = DistributedDataParallel(nn.Linear(100, 10).cuda(rank), device_ids=[rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)  # expect: TL021
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x.cuda(rank)), y.cuda(rank)).backward()
            optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(torch.load("dataset.pt"))
