"""Darknet-style detector training: the loss sums over every image of the nominal batch and the
learning rate is given per image, so the micro-batches' summed losses need no division."""

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
            box += F.mse_loss(out[..., :4], target[..., :4], reduction="sum")
            objectness += F.binary_cross_entropy_with_logits(out[..., 4], target[..., 4], reduction="sum")
            classes += F.binary_cross_entropy_with_logits(out[..., 5:], target[..., 5:], reduction="sum")
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
            total.backward()
            if seen % cfg.subdivisions == 0:
                optimizer.step()
                optimizer.zero_grad()
