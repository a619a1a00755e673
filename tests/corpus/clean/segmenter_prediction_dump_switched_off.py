"""U-Net style segmenter; a debugging dump of validation masks stays behind a module switch that is off."""

import os

import torch
from torch import nn
from torch.utils.data import DataLoader

from data import SegmentationFolder

DUMP_MASKS = False
DUMP_DIR = "mask_dumps"


class TinySegmenter(nn.Module):
    def __init__(self, classes=4):
        super().__init__()
        self.encode = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU()
        )
        self.head = nn.Conv2d(16, classes, 1)

    def forward(self, x):
        return self.head(self.encode(x))


def dump_masks(model, loader, epoch):
    model.eval()
    os.makedirs(DUMP_DIR, exist_ok=True)
    masks = []
    for images, _ in loader:
        masks.append(model(images).argmax(dim=1).cpu())
    torch.save(torch.cat(masks), os.path.join(DUMP_DIR, f"epoch{epoch:03d}.pt"))


@torch.no_grad()
def mean_iou(model, loader, classes=4):
    model.eval()
    inter = torch.zeros(classes)
    union = torch.zeros(classes)
    for images, masks in loader:
        pred = model(images).argmax(dim=1)
        for c in range(classes):
            inter[c] += ((pred == c) & (masks == c)).sum()
            union[c] += ((pred == c) | (masks == c)).sum()
    return (inter / union.clamp(min=1)).mean().item()


def train():
    train_loader = DataLoader(SegmentationFolder("train"), batch_size=8, shuffle=True)
    val_loader = DataLoader(SegmentationFolder("val"), batch_size=8)
    model = TinySegmenter()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(50):
        model.train()
        for images, masks in train_loader:
            optimizer.zero_grad()
            loss_fn(model(images), masks).backward()
            optimizer.step()
        print(f"epoch {epoch}: mIoU {mean_iou(model, val_loader):.3f}")
        if DUMP_MASKS and epoch % 10 == 0:
            dump_masks(model, val_loader, epoch)


if __name__ == "__main__":
    train()
