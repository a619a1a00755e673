"""Buffers created once before the step loop keep every step's graph, and a retry loop that can
come back to the step after it."""

import math

import torch
import torch.nn.functional as F


def train_epoch(model, loader, optimizer, splits, writer):
    model.train()
    epoch_losses = []
    for step, (images, labels) in enumerate(loader):
        optimizer.zero_grad()
        for part_x, part_y in zip(images.chunk(splits), labels.chunk(splits)):
            loss = F.cross_entropy(model(part_x), part_y) / splits
            epoch_losses.append(loss)  # expect: TL010
            loss.backward()
        optimizer.step()
    writer.add_scalar("loss", torch.stack(epoch_losses).mean().item(), step)


def train_step(batches, model, optimizer, accumulation):
    optimizer.zero_grad()
    finished, seen = False, 0
    while True:
        finished = False
        loss = model(next(batches)) / accumulation
        if math.isfinite(loss.item()):
            loss.backward()
            seen += 1
            optimizer.step()  # expect: TL001
            if seen == accumulation:
                finished = True
            if finished:
                break
    return loss.item()
