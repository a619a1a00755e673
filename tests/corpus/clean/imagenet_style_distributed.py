"""ImageNet-style script: optional distributed sampler, AMP with optional clipping, EMA on the side."""
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torchvision
from torch.utils.data import DataLoader


def train_one_epoch(model, ema_model, loader, criterion, optimizer, scheduler, scaler, args):
    model.train()
    for images, target in loader:
        images, target = images.cuda(non_blocking=True), target.cuda(non_blocking=True)
        with torch.autocast("cuda", enabled=args.amp):
            loss = criterion(model(images), target)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        if args.clip_grad > 0:
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(model.parameters(), args.clip_grad)
        old_scale = scaler.get_scale()
        scaler.step(optimizer)
        scaler.update()
        if scaler.get_scale() >= old_scale:
            scheduler.step()
        with torch.no_grad():
            for e, p in zip(ema_model.parameters(), model.parameters()):
                e.lerp_(p, 1 - args.ema_decay)


def main(args):
    if args.distributed:
        dist.init_process_group("nccl")
        torch.cuda.set_device(args.local_rank)
    model = torchvision.models.resnet50()
    ema_model = torchvision.models.resnet50()
    model.cuda()
    if args.distributed:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[args.local_rank])
    criterion = nn.CrossEntropyLoss().cuda()
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=0.9, weight_decay=1e-4)
    ema_model.load_state_dict(model.state_dict() if not args.distributed else model.module.state_dict())
    ema_model.cuda().eval()
    train_set = torchvision.datasets.ImageFolder(args.data, torchvision.transforms.ToTensor())
    train_sampler = torch.utils.data.distributed.DistributedSampler(train_set) if args.distributed else None
    loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=(train_sampler is None),
                        num_workers=args.workers, pin_memory=True, sampler=train_sampler)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr, total_steps=args.epochs * len(loader))
    scaler = torch.amp.GradScaler("cuda", enabled=args.amp)
    for epoch in range(args.epochs):
        if args.distributed:
            train_sampler.set_epoch(epoch)
        train_one_epoch(model, ema_model, loader, criterion, optimizer, scheduler, scaler, args)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("data")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--epochs", type=int, default=90)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--clip-grad", type=float, default=0.0)
    p.add_argument("--ema-decay", type=float, default=0.9998)
    p.add_argument("--amp", action="store_true")
    p.add_argument("--distributed", action="store_true")
    p.add_argument("--local-rank", type=int, default=0)
    main(p.parse_args())
