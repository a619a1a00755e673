"""A small vision transformer trained with AMP and gradient accumulation, with
the bugs that make such runs diverge or quietly underperform.

Each buggy line ends with an ``# expect: CODE`` comment naming the torchlint rule
that reports it; ``tests/test_examples.py`` checks that exactly these are found.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, dim, heads=8, drop=0.1):
        super().__init__()
        self.heads = heads
        self.drop = drop
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q @ k.transpose(-2, -1)) * (c // self.heads) ** -0.5
        attn = F.dropout(attn.softmax(dim=-1), p=self.drop)  # expect: TL011
        out = (attn @ v).transpose(1, 2).view(b, n, -1)  # expect: TL008
        return self.proj(out)


class TinyViT(nn.Module):
    def __init__(self, dim=192, depth=6, classes=100):
        super().__init__()
        self.embed = nn.Linear(48, dim)
        self.blocks = [Attention(dim) for _ in range(depth)]  # expect: TL013
        self.head = nn.Linear(dim, classes)

    def forward(self, patches):
        x = self.embed(patches)
        for block in self.blocks:
            x = x + block(x)
        return self.head(x.mean(dim=1))


def train(model, loader, epochs=10, accum_steps=4, device="cuda"):
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.05)
    scaler = torch.amp.GradScaler("cuda")
    for epoch in range(epochs):
        for step, (patches, labels) in enumerate(loader):
            patches, labels = patches.to(device), labels.to(device)
            with torch.autocast("cuda", dtype=torch.float16):
                loss = F.cross_entropy(model(patches), labels)
            scaler.scale(loss).backward()  # expect: TL009
            if (step + 1) % accum_steps == 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: TL014
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad(set_to_none=True)
