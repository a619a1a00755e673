"""A DDP script with a latency benchmark, default-dtype CUDA autocast and a sampler never told the epoch."""
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
import torch.distributed as dist


def benchmark(model, batch, iters=20):
    start = time.perf_counter()
    with torch.inference_mode():
        for _ in range(iters):
            model(batch)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters


def main(model, dataset, epochs=5):
    dist.init_process_group("nccl")
    model = nn.parallel.DistributedDataParallel(model.cuda())
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=64, sampler=sampler)  # expect: TL021
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    print("forward latency", benchmark(model, next(iter(loader))[0].cuda()))
    for epoch in range(epochs):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            with torch.autocast("cuda"):
                loss = nn.functional.cross_entropy(model(x.cuda()), y.cuda())
            loss.backward()  # expect: TL018
            optimizer.step()
