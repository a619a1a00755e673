"""A mixed-precision trainer that drops an update whose gradient norm explodes.

The dropped update still calls the scaler's step and update with the gradients set to None, so the
scaler's per-optimizer state (unscale_ already ran) is reset; the iteration then moves on.
"""
import torch
from torch import nn


class RobustTrainer:
    def __init__(self, model: nn.Module, lr: float, max_norm: float, skip_factor: float = 10.0):
        self.model = model
        self.opt = torch.optim.AdamW(model.parameters(), lr=lr)
        self.scaler = torch.amp.GradScaler("cuda")
        self.max_norm = max_norm
        self.skip_factor = skip_factor
        self.skipped = 0

    def _drop_update(self, norm):
        print(f"gradient norm {norm:.1f} too large, update dropped")
        self.skipped += 1

    def step(self, batch):
        inputs, targets = batch
        self.opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = nn.functional.cross_entropy(self.model(inputs), targets)
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.opt)
        norm = nn.utils.clip_grad_norm_(self.model.parameters(), self.max_norm)
        if torch.isfinite(norm) and norm > self.skip_factor * self.max_norm:
            self._drop_update(norm)
            self.opt.zero_grad(set_to_none=True)
            self.scaler.step(self.opt)
            self.scaler.update()
            return None
        self.scaler.step(self.opt)
        self.scaler.update()
        return loss.detach()

    def fit(self, loader, epochs):
        self.model.train()
        for epoch in range(epochs):
            for batch in loader:
                self.step(batch)


def fit_discriminator(disc, loader, lr=2e-4, max_norm=5.0):
    opt = torch.optim.Adam(disc.parameters(), lr=lr, betas=(0.5, 0.999))
    scaler = torch.amp.GradScaler("cuda")
    disc.train()
    for real, fake in loader:
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda"):
            loss = nn.functional.softplus(-disc(real)).mean() + nn.functional.softplus(disc(fake)).mean()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        norm = nn.utils.clip_grad_norm_(disc.parameters(), max_norm)
        if norm > 4 * max_norm:
            opt.zero_grad(set_to_none=True)
            scaler.step(opt)
            scaler.update()
            continue
        scaler.step(opt)
        scaler.update()
