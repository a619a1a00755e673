"""A self-supervised pre-training loop whose schedules are classes of the project: each `step()`
writes the coming iteration's learning rate / weight decay into the param groups (the optimizer
is built without a rate), so they step before the update by design. No torch scheduler here."""
import math

import torch


class WarmupCosineSchedule(object):
    def __init__(self, optimizer, warmup_steps, start_lr, ref_lr, T_max, final_lr=0.0):
        self.optimizer = optimizer
        self.start_lr, self.ref_lr, self.final_lr = start_lr, ref_lr, final_lr
        self.warmup_steps, self.T_max = warmup_steps, T_max - warmup_steps
        self._step = 0

    def step(self):
        self._step += 1
        if self._step < self.warmup_steps:
            new_lr = self.start_lr + self._step / max(1, self.warmup_steps) * (self.ref_lr - self.start_lr)
        else:
            progress = (self._step - self.warmup_steps) / max(1, self.T_max)
            new_lr = self.final_lr + (self.ref_lr - self.final_lr) * 0.5 * (1.0 + math.cos(math.pi * progress))
        for group in self.optimizer.param_groups:
            group["lr"] = new_lr
        return new_lr


class CosineWDSchedule(object):
    def __init__(self, optimizer, ref_wd, T_max, final_wd=0.0):
        self.optimizer, self.ref_wd, self.final_wd, self.T_max = optimizer, ref_wd, final_wd, T_max
        self._step = 0

    def step(self):
        self._step += 1
        progress = self._step / self.T_max
        new_wd = self.final_wd + (self.ref_wd - self.final_wd) * 0.5 * (1.0 + math.cos(math.pi * progress))
        for group in self.optimizer.param_groups:
            if not group.get("WD_exclude", False):
                group["weight_decay"] = new_wd
        return new_wd


def init_opt(model, iterations_per_epoch, epochs, ref_lr=1e-3, wd=0.04):
    optimizer = torch.optim.AdamW(model.parameters())
    scheduler = WarmupCosineSchedule(optimizer, 10 * iterations_per_epoch, 1e-6, ref_lr, epochs * iterations_per_epoch)
    wd_scheduler = CosineWDSchedule(optimizer, wd, epochs * iterations_per_epoch)
    scaler = torch.amp.GradScaler()
    return optimizer, scaler, scheduler, wd_scheduler


def pretrain(model, loader, epochs):
    optimizer, scaler, scheduler, wd_scheduler = init_opt(model, len(loader), epochs)
    model.train()
    for epoch in range(epochs):
        for clips in loader:
            new_lr = scheduler.step()
            new_wd = wd_scheduler.step()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(clips).pow(2).mean()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
            print(f"epoch {epoch} lr {new_lr:.2e} wd {new_wd:.2e} loss {loss.item():.4f}")
