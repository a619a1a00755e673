"""Throughput benchmark: data-parallel when the launcher starts several processes."""

import argparse
import os

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=64)
    return parser.parse_args()


def train():
    args = parse_args()
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if world_size > 1:
        torch.distributed.init_process_group("nccl")
        torch.cuda.set_device(local_rank)
    images = torch.randn(args.steps * args.batch_size, 3, 32, 32)
    labels = torch.randint(0, 10, (args.steps * args.batch_size,))
    train_loader = DataLoader(TensorDataset(images, labels), batch_size=args.batch_size)  # expect: TL021
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 10)).cuda()
    if world_size > 1:
        model = DistributedDataParallel(model, device_ids=[local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for batch, target in train_loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(batch.cuda()), target.cuda()).backward()
        optimizer.step()


if __name__ == "__main__":
    train()
