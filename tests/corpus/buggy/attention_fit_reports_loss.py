"""Fits an attention layer to constant targets and reports how far the loss fell."""

import argparse
import time

import torch
from torch import nn


class FullAttention(nn.Module):
    def __init__(self, opt):
        super().__init__()
        self.heads = opt.heads
        self.qkv = nn.Linear(opt.width, 3 * opt.width)
        self.out = nn.Linear(opt.width, opt.width)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        weights = torch.softmax(q @ k.transpose(-2, -1) / q.size(-1) ** 0.5, dim=-1)
        return self.out(weights @ v)


def time_training_step(opt, seq_len, repeats=200):
    layer = FullAttention(opt).to(opt.device)
    optimizer = torch.optim.Adam(layer.parameters(), lr=1e-4)
    optimizer.zero_grad()
    x = torch.ones(4, seq_len, opt.width, device=opt.device)
    target = torch.zeros(4, seq_len, opt.width, device=opt.device)
    layer(x)  # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        prediction = layer(x)
        loss = ((target - prediction) ** 2).mean()
        loss.backward()
        optimizer.step()  # expect: TL001
    elapsed = (time.perf_counter() - start) / repeats
    print(f"seq_len={seq_len}: {elapsed * 1000:.2f} ms per step, final loss {loss.item():.4f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--heads", type=int, default=8)
    opt = parser.parse_args()
    opt.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    for seq_len in (128, 512, 2048):
        time_training_step(opt, seq_len)
