"""The same supernet trainer drawing a new micro-batch for each backward: gradient accumulation whose
loss is never divided by the number of micro-batches."""

import torch
from torch import nn


def train_epoch(model, loader, optimizer, criterion, args, device="cuda"):
    model.train()
    batches = iter(loader)
    for _ in range(len(loader) // args.sample_accumulation_steps):
        optimizer.zero_grad()
        for _ in range(args.sample_accumulation_steps):
            images, labels = next(batches)
            model.sample_path()
            logits = model(images.to(device))
            loss = criterion(logits, labels.to(device))
            loss.backward()  # expect: TL009
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
