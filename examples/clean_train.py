"""A correct training script: a small GPT-style language model trained with
AMP, gradient accumulation, clipping after unscaling, a cosine schedule, and a
periodic evaluation in eval mode under no_grad. torchlint reports nothing here.
"""

import math
import os

import torch
import torch.nn as nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset


class Block(nn.Module):
    def __init__(self, dim, heads, dropout):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, dropout=dropout, batch_first=True)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim), nn.Dropout(dropout))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab=256, dim=128, heads=4, depth=4, block_size=64, dropout=0.1):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(1, block_size, dim))
        self.blocks = nn.ModuleList([Block(dim, heads, dropout) for _ in range(depth)])
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.register_buffer("mask", torch.triu(torch.ones(block_size, block_size, dtype=torch.bool), 1))

    def forward(self, idx):
        t = idx.size(1)
        x = F.dropout(self.tok(idx) + self.pos[:, :t], p=0.1, training=self.training)
        for block in self.blocks:
            x = block(x, self.mask[:t, :t])
        return self.head(self.ln(x))


@torch.no_grad()
def estimate_loss(model, loader, device):
    model.eval()
    total, batches = 0.0, 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        logits = model(x)
        total += F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1)).item()
        batches += 1
    model.train()
    return total / max(batches, 1)


def lr_at(it, warmup=100, max_iters=2000, base_lr=6e-4):
    if it < warmup:
        return base_lr * (it + 1) / warmup
    progress = (it - warmup) / max(1, max_iters - warmup)
    return base_lr * 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    data = torch.randint(0, 256, (4096, 65))
    train_loader = DataLoader(
        TensorDataset(data[:3500, :-1], data[:3500, 1:]), batch_size=32, shuffle=True, num_workers=2
    )
    val_loader = DataLoader(TensorDataset(data[3500:, :-1], data[3500:, 1:]), batch_size=64, num_workers=2)
    model = TinyGPT().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, weight_decay=0.1)
    scaler = torch.amp.GradScaler(device, enabled=(device == "cuda"))
    accum_steps = 4
    it = 0
    for epoch in range(int(os.environ.get("EPOCHS", "3"))):
        model.train()
        for micro, (x, y) in enumerate(train_loader):
            x, y = x.to(device), y.to(device)
            with torch.autocast(device, dtype=torch.bfloat16):
                logits = model(x)
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
                loss = loss / accum_steps
            scaler.scale(loss).backward()
            if (micro + 1) % accum_steps != 0:
                continue
            for group in optimizer.param_groups:
                group["lr"] = lr_at(it)
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            it += 1
        print(f"epoch {epoch}: val loss {estimate_loss(model, val_loader, device):.4f}")


if __name__ == "__main__":
    main()
