"""Detection training with apex: amp gets the model moved in its own argument and a fresh optimizer."""

import torch
from apex import amp
from torch import nn


def build_detector(num_classes):
    return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.LazyLinear(num_classes))


def train(cfg, loader):
    detector = build_detector(cfg.num_classes)
    optimizer = torch.optim.AdamW(detector.parameters(), lr=cfg.lr, weight_decay=0.05)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[8, 11])
    if cfg.fp16:
        detector, optimizer = amp.initialize(
            detector.cuda(),
            optimizer,
            opt_level="O1",
        )
    for epoch in range(cfg.epochs):
        for images, targets in loader:
            loss = nn.functional.cross_entropy(detector(images.cuda()), targets.cuda())
            optimizer.zero_grad()
            with amp.scale_loss(loss, optimizer) as scaled_loss:
                scaled_loss.backward()
            optimizer.step()
        scheduler.step()
