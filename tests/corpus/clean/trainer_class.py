"""A self-contained trainer object with AMP, accumulation and checkpointing."""
import os

import torch
import torch.nn.functional as F


class Trainer:
    def __init__(self, model, train_loader, val_loader, lr=3e-4, accum_steps=4, max_epochs=10, device="cuda"):
        self.device = device
        self.model = model.to(device)
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr, betas=(0.9, 0.95))
        self.scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(self.optimizer, T_max=max_epochs)
        self.scaler = torch.amp.GradScaler("cuda")
        self.accum_steps = accum_steps
        self.max_epochs = max_epochs
        self.epoch = 0

    def _loss(self, batch):
        x, y = (t.to(self.device, non_blocking=True) for t in batch)
        with torch.autocast("cuda", dtype=torch.float16):
            logits = self.model(x)
            return F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))

    def train_epoch(self):
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        for step, batch in enumerate(self.train_loader):
            loss = self._loss(batch) / self.accum_steps
            self.scaler.scale(loss).backward()
            if (step + 1) % self.accum_steps == 0:
                self.scaler.unscale_(self.optimizer)
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
                self.scaler.step(self.optimizer)
                self.scaler.update()
                self.optimizer.zero_grad(set_to_none=True)

    @torch.no_grad()
    def validate(self):
        self.model.eval()
        losses = [self._loss(batch).item() for batch in self.val_loader]
        self.model.train()
        return sum(losses) / max(len(losses), 1)

    def save(self, path):
        torch.save({"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                    "scaler": self.scaler.state_dict(), "epoch": self.epoch}, path)

    def fit(self, ckpt_dir="checkpoints"):
        os.makedirs(ckpt_dir, exist_ok=True)
        best = float("inf")
        for self.epoch in range(self.epoch, self.max_epochs):
            self.train_epoch()
            self.scheduler.step()
            val = self.validate()
            if val < best:
                best = val
                self.save(os.path.join(ckpt_dir, "best.pt"))
            print(f"epoch {self.epoch}: val loss {val:.4f}")
