"""A trainer whose validation reuses the training step under no_grad, in eval mode set by a decorator."""

import torch
from torch import nn


def in_eval_mode(method):
    def run(trainer, *args, **kwargs):
        was_training = trainer.training
        trainer.eval()
        try:
            out = method(trainer, *args, **kwargs)
        finally:
            trainer.train(was_training)
        return out

    return run


class SegmentationTrainer(nn.Module):
    def __init__(self, net, optimizer):
        super().__init__()
        self.net = net
        self.optimizer = optimizer

    def shared_step(self, images, masks):
        logits = self.net(images)
        loss = nn.functional.cross_entropy(logits, masks)
        if self.training:
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
        return loss.item()

    def fit_epoch(self, loader):
        self.train()
        return [self.shared_step(x, y) for x, y in loader]

    @torch.no_grad()
    @in_eval_mode
    def validate(self, loader):
        losses = []
        for x, y in loader:
            losses.append(self.shared_step(x, y))
        return losses
