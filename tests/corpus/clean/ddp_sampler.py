"""Multi-GPU training with DistributedDataParallel, launched by torchrun."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def setup():
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    return local_rank


def build_data(n=10000, d=64):
    x = torch.randn(n, d)
    y = (x.sum(1) > 0).long()
    return TensorDataset(x, y)


def main(epochs=10, batch_size=64):
    local_rank = setup()
    dataset = build_data()
    sampler = DistributedSampler(dataset, shuffle=True, seed=42)
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=2, pin_memory=True)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 2)).cuda(local_rank)
    model = DDP(model, device_ids=[local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * dist.get_world_size())
    criterion = nn.CrossEntropyLoss()

    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        model.train()
        epoch_loss = torch.zeros(1, device=local_rank)
        for x, y in loader:
            x, y = x.cuda(local_rank, non_blocking=True), y.cuda(local_rank, non_blocking=True)
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            epoch_loss += loss.detach()
        dist.all_reduce(epoch_loss)
        if dist.get_rank() == 0:
            print(f"epoch {epoch}: loss {epoch_loss.item() / (len(loader) * dist.get_world_size()):.4f}")
            torch.save(model.module.state_dict(), "model.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
