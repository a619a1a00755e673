"""Detection fine-tuning with apex: the optimizer is resumed on the CPU, then amp gets the moved model."""

import torch
from apex import amp
from torch import nn


def build_detector(num_classes):
    return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.LazyLinear(num_classes))


def train(cfg, loader):
    detector = build_detector(cfg.num_classes)
    optimizer = torch.optim.AdamW(detector.parameters(), lr=cfg.lr, weight_decay=0.05)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[8, 11])
    if cfg.resume_from:
        checkpoint = torch.load(cfg.resume_from, map_location="cpu")
        detector.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
    detector, optimizer = amp.initialize(
        detector.cuda(),  # expect: TL017
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
