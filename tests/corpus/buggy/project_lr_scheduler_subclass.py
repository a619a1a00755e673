"""The same pre-training loop with a warm-up written as a torch scheduler (a LambdaLR subclass
through a project base): torch's contract holds, stepping it first skips the first rate."""
import math

import torch
from torch.optim.lr_scheduler import LambdaLR


class ProjectScheduler(LambdaLR):
    """Common base of the project's schedules."""


class WarmupCosineLR(ProjectScheduler):
    def __init__(self, optimizer, warmup_steps, total_steps):
        def factor(step):
            if step < warmup_steps:
                return step / max(1, warmup_steps)
            return 0.5 * (1.0 + math.cos(math.pi * (step - warmup_steps) / max(1, total_steps - warmup_steps)))

        super().__init__(optimizer, factor)


def pretrain(model, loader, epochs):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = WarmupCosineLR(optimizer, 10 * len(loader), epochs * len(loader))
    scaler = torch.amp.GradScaler()
    model.train()
    for epoch in range(epochs):
        for clips in loader:
            scheduler.step()  # expect: TL015
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(clips).pow(2).mean()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
        print(f"epoch {epoch} loss {loss.item():.4f}")
