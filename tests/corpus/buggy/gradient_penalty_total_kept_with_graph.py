"""Classifier trained with an input-gradient penalty (double backprop): the penalty is built on
gradients asked for with `create_graph=True`, so it carries the graph; its running total is
logged every few steps and reset only after the log, so between logs it grows with each step's graph."""

import torch
import torch.nn.functional as F


def train(model, loader, cfg):
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=0.9)
    penalty_total = 0.0
    for epoch in range(cfg.epochs):
        for step, (images, labels) in enumerate(loader):
            images.requires_grad_(True)
            loss = F.cross_entropy(model(images), labels)
            (input_grads,) = torch.autograd.grad(loss, images, create_graph=True)
            penalty = input_grads.pow(2).mean()
            optimizer.zero_grad()
            (loss + cfg.penalty_weight * penalty).backward()
            optimizer.step()
            penalty_total += penalty  # expect: TL010
            if (step + 1) % cfg.log_every:
                continue
            print(f"epoch {epoch} step {step}: penalty {penalty_total / cfg.log_every:.4f}")
            penalty_total = 0.0
