"""DDP with a bf16 autocast (no scaler needed), an inline DistributedSampler and warmup+cosine."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def build_scheduler(optimizer, warmup, total):
    warm = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.01, total_iters=warmup)
    cos = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total - warmup)
    return torch.optim.lr_scheduler.SequentialLR(optimizer, [warm, cos], milestones=[warmup])


def run(model, train_set, val_set, epochs=10):
    dist.init_process_group("nccl")
    rank = int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda", rank)
    torch.cuda.set_device(device)
    model = DDP(model.to(device), device_ids=[rank])
    train_loader = DataLoader(train_set, batch_size=32, sampler=DistributedSampler(train_set),
                              num_workers=4, pin_memory=True, drop_last=True)
    val_loader = DataLoader(val_set, batch_size=64, shuffle=False)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    scheduler = build_scheduler(optimizer, warmup=500, total=epochs * len(train_loader))
    criterion = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        train_loader.sampler.set_epoch(epoch)
        model.train()
        for x, y in train_loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                loss = criterion(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            scheduler.step()
        if rank == 0:
            model.eval()
            correct = 0
            with torch.no_grad():
                for x, y in val_loader:
                    correct += (model.module(x.to(device)).argmax(1).cpu() == y).sum().item()
            print(f"epoch {epoch}: val acc {correct / len(val_set):.4f}")
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    from torchvision.datasets import FakeData
    from torchvision.models import resnet18
    from torchvision.transforms import ToTensor

    run(resnet18(num_classes=10), FakeData(5000, transform=ToTensor()), FakeData(500, transform=ToTensor()))
