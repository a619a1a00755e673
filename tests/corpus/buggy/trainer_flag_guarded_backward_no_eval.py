"""A trainer whose validation reuses the training step under no_grad but never leaves training mode."""

import torch
from torch import nn


class SegmentationTrainer(nn.Module):
    def __init__(self, net, optimizer):
        super().__init__()
        self.net = net
        self.optimizer = optimizer

    def shared_step(self, images, masks):
        logits = self.net(images)
        loss = nn.functional.cross_entropy(logits, masks)
        if self.training:
            loss.backward()  # expect: TL016
            self.optimizer.step()
            self.optimizer.zero_grad()
        return loss.item()

    def fit_epoch(self, loader):
        self.train()
        return [self.shared_step(x, y) for x, y in loader]

    @torch.no_grad()
    def validate(self, loader):
        return [self.shared_step(x, y) for x, y in loader]
