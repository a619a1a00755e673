"""One pass of DDP fine-tuning over a calibration set: the sampler is read once, no epochs."""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler


def calibrate(model, dataset, lr=1e-4):
    dist.init_process_group("nccl")
    device = torch.device("cuda", dist.get_rank())
    net = DistributedDataParallel(model.to(device), device_ids=[device.index])
    optimizer = torch.optim.AdamW(net.parameters(), lr=lr)
    loader = DataLoader(dataset, batch_size=16, sampler=DistributedSampler(dataset))
    for inputs, labels in loader:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(inputs.to(device)), labels.to(device))
        loss.backward()
        optimizer.step()
    dist.destroy_process_group()
    return net.module


if __name__ == "__main__":
    calibrate(torch.hub.load("pytorch/vision", "resnet18"), torch.load("calibration.pt"))
