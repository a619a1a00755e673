"""Fine-tuning whose warm-up schedule keeps torch's step(), built by a helper and stepped too early."""

import torch
from torch.optim.lr_scheduler import _LRScheduler


class WarmupThenFlat(_LRScheduler):
    def __init__(self, optimizer, warmup, last_epoch=-1):
        self.warmup = warmup
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        scale = min(1.0, self.last_epoch / self.warmup)
        return [base * scale for base in self.base_lrs]


def build_training(model, lr, warmup):
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    schedule = WarmupThenFlat(optimizer, warmup)
    return model, optimizer, schedule


def finetune(model, loader, epochs):
    model, optimizer, schedule = build_training(model, 2e-5, 500)
    for _ in range(epochs):
        for batch, labels in loader:
            loss = torch.nn.functional.cross_entropy(model(batch), labels)
            loss.backward()
            schedule.step()  # expect: TL015
            optimizer.step()
            optimizer.zero_grad()
