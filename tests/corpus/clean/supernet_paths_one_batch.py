"""One-shot NAS supernet training: several sampled paths are run on the same batch and their
gradients summed on purpose before one optimizer step (a multi-path objective, not micro-batches)."""

import torch
from torch import nn


def train_epoch(model, loader, optimizer, criterion, args, device="cuda"):
    model.train()
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        optimizer.zero_grad()
        for _ in range(args.sample_accumulation_steps):
            model.sample_path()  # the supernet picks a random sub-network for the next forward
            logits = model(images)
            loss = criterion(logits, labels)
            loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
