"""engine.py of a detection project: library functions only, the entry point lives in another file."""
import math
import sys

import torch


def train_one_epoch(model, optimizer, data_loader, device, epoch, print_freq=50):
    model.train()
    for i, (images, targets) in enumerate(data_loader):
        images = [img.to(device) for img in images]
        targets = [{k: v.to(device) for k, v in t.items()} for t in targets]
        loss_dict = model(images, targets)
        losses = sum(loss for loss in loss_dict.values())
        if not math.isfinite(losses.item()):
            print(f"Loss is {losses.item()}, stopping training: {loss_dict}")
            sys.exit(1)
        optimizer.zero_grad()
        losses.backward()
        optimizer.step()
        if i % print_freq == 0:
            print(f"epoch {epoch} [{i}/{len(data_loader)}] loss {losses.item():.4f}")


def evaluate_recall(model, data_loader, device, iou_threshold=0.5):
    model.eval()
    found = total = 0
    for images, targets in data_loader:
        outputs = model([img.to(device) for img in images])  # expect: TL006
        for out, tgt in zip(outputs, targets):
            if len(tgt["boxes"]) == 0:
                continue
            ious = box_iou(tgt["boxes"].to(device), out["boxes"])
            found += (ious.max(dim=1).values >= iou_threshold).sum().item() if ious.numel() else 0
            total += len(tgt["boxes"])
    return found / max(total, 1)


def box_iou(a, b):
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    lt = torch.max(a[:, None, :2], b[:, :2])
    rb = torch.min(a[:, None, 2:], b[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    return inter / (area_a[:, None] + area_b - inter)


def fit(model, optimizer, lr_scheduler, train_loader, val_loader, device, epochs):
    for epoch in range(epochs):
        train_one_epoch(model, optimizer, train_loader, device, epoch)
        lr_scheduler.step()
        recall = evaluate_recall(model, val_loader, device)
        print(f"epoch {epoch}: recall@0.5 {recall:.3f}")
