"""A mixed-precision trainer whose "drop the update" branch forgets to leave the iteration.

The branch clears the gradients and steps, then falls through to the normal step, which runs
with the gradients already gone; the second loop clears on the normal path after the backward.
"""
import torch
from torch import nn


class RobustTrainer:
    def __init__(self, model: nn.Module, lr: float, max_norm: float):
        self.model = model
        self.opt = torch.optim.AdamW(model.parameters(), lr=lr)
        self.scaler = torch.amp.GradScaler("cuda")
        self.max_norm = max_norm

    def step(self, batch):
        inputs, targets = batch
        self.opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = nn.functional.cross_entropy(self.model(inputs), targets)
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.opt)
        norm = nn.utils.clip_grad_norm_(self.model.parameters(), self.max_norm)
        if torch.isfinite(norm) and norm > 10 * self.max_norm:
            print(f"gradient norm {norm:.1f} too large, update dropped")
            self.opt.zero_grad(set_to_none=True)  # expect: TL002
            self.scaler.step(self.opt)
            self.scaler.update()
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
        opt.zero_grad(set_to_none=True)  # expect: TL002
        scaler.step(opt)
        scaler.update()
