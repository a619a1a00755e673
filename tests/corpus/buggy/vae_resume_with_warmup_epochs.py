"""Train a small VAE with Adamax; buggy: schedules stepped before any update.

The cosine schedule starts after `--warmup_epochs`; it steps at the top of each later epoch,
which is the end of the epoch before. A resumed run loads the optimizer and schedule first.
"""

import argparse
import os

import torch
from torch import nn


class TinyVAE(nn.Module):
    def __init__(self, dim=784, latent=16):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(dim, 256), nn.ReLU(), nn.Linear(256, 2 * latent))
        self.dec = nn.Sequential(nn.Linear(latent, 256), nn.ReLU(), nn.Linear(256, dim))

    def forward(self, x):
        mu, logvar = self.enc(x).chunk(2, dim=-1)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        recon = self.dec(z)
        kl = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(-1)
        return nn.functional.binary_cross_entropy_with_logits(recon, x, reduction="none").sum(-1) + kl


def run(args, loader):
    model = TinyVAE()
    optimizer = torch.optim.Adamax(model.parameters(), args.lr, eps=1e-3)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, float(args.epochs - args.warmup_epochs - 1))
    checkpoint_path = os.path.join(args.save, "last.pt")
    if args.resume:
        state = torch.load(checkpoint_path, map_location="cpu")
        start_epoch = state["epoch"]
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
    else:
        start_epoch = 0

    for epoch in range(start_epoch, args.epochs):
        if epoch > args.warmup_epochs - 10:
            scheduler.step()  # expect: TL015
        model.train()
        for x in loader:
            loss = model(x.flatten(1)).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        torch.save(
            {
                "epoch": epoch + 1,
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
            },
            checkpoint_path,
        )


class ResumableRunner:
    """Step-based runner: a resumed run whose saved schedule disagrees with the optimizer's rate
    resynchronises it once before training continues."""

    def __init__(self, model, cfg):
        self.model = model
        self.cfg = cfg
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda s: min(1.0, (s + 1) / 100))
        self.global_step = 0
        if cfg.resume:
            self.model.load_state_dict(torch.load(cfg.checkpoint, map_location="cpu"))

    def _load(self, saved):
        self.model.load_state_dict(saved["model"])
        self.optimizer.load_state_dict(saved["optimizer"])
        self.scheduler.load_state_dict(saved["scheduler"])
        self.global_step = saved["step"]

    def train(self, loader):
        drift = self.optimizer.param_groups[0]["lr"] - self.scheduler.get_last_lr()[0]
        if abs(drift) > 1e-12 or self.cfg.fast_start:
            self.scheduler.step()  # expect: TL015
        while self.global_step < self.cfg.max_steps:
            for x in loader:
                loss = self.model(x.flatten(1)).mean()
                loss.backward()
                self.optimizer.step()
                self.scheduler.step()
                self.optimizer.zero_grad()
                self.global_step += 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--warmup_epochs", type=int, default=5)
    parser.add_argument("--save", default="runs")
    parser.add_argument("--resume", action="store_true")
    run(parser.parse_args(), [torch.rand(32, 1, 28, 28) for _ in range(4)])
