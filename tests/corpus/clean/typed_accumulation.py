"""A typed fine-tuning loop: the loss is divided only when accumulating, and the scaled loss is
wrapped in `typing.cast` for the type checker before backward (the cast keeps the value)."""
from __future__ import annotations

from typing import cast

import torch
from torch import Tensor, nn
from torch.utils.data import DataLoader


def train_one_epoch(
    model: nn.Module,
    loader: DataLoader,
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    grad_accum_steps: int = 1,
) -> float:
    model.train()
    total = 0.0
    for step, (inputs, labels) in enumerate(loader):
        with torch.autocast("cuda", dtype=torch.float16):
            logits = model(inputs)
            loss = nn.functional.cross_entropy(logits, labels)
        total += loss.item()
        if grad_accum_steps > 1:
            loss = loss / grad_accum_steps
        cast(Tensor, scaler.scale(loss)).backward()
        if (step + 1) % grad_accum_steps == 0:
            scaler.unscale_(optimizer)
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
    return total / len(loader)
