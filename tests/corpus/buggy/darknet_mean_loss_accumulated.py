"""Darknet-style detector training where the loss averages each micro-batch: the accumulated
gradient is the sum of N micro-batch means, N times the mean the learning rate was tuned for."""

import torch
import torch.nn.functional as F
from torch import nn


class GridLoss(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.num_classes = num_classes

    def forward(self, outputs, targets):
        box, objectness, classes = 0, 0, 0
        for out, target in zip(outputs, targets):
            box += F.mse_loss(out[..., :4], target[..., :4], reduction="mean")
            objectness += F.binary_cross_entropy_with_logits(out[..., 4], target[..., 4], reduction="mean")
            classes += F.binary_cross_entropy_with_logits(out[..., 5:], target[..., 5:], reduction="mean")
        return box + objectness + classes, box, objectness, classes


def train(detector, loader, cfg):
    optimizer = torch.optim.SGD(detector.parameters(), lr=cfg.learning_rate / cfg.batch, momentum=0.9)
    criterion = GridLoss(cfg.classes)
    detector.train()
    seen = 0
    for epoch in range(cfg.epochs):
        for images, targets in loader:
            seen += 1
            total, box, objectness, classes = criterion(detector(images), targets)
            total.backward()  # expect: TL009
            if seen % cfg.subdivisions == 0:
                optimizer.step()
                optimizer.zero_grad()
