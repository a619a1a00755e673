"""A small GPT pretraining loop: micro-steps under autocast, periodic loss estimation."""
import math
import time

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F

batch_size, block_size, grad_accum = 12, 256, 5
max_iters, eval_interval, eval_iters = 5000, 250, 100
learning_rate, min_lr, warmup = 6e-4, 6e-5, 200
device = "cuda" if torch.cuda.is_available() else "cpu"
dtype = "bfloat16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "float16"
ptdtype = {"bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
ctx = torch.autocast(device_type="cuda", dtype=ptdtype)
data = {split: np.memmap(f"{split}.bin", dtype=np.uint16, mode="r") for split in ("train", "val")}


def get_batch(split):
    d = data[split]
    ix = torch.randint(len(d) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy(d[i:i + block_size].astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy(d[i + 1:i + 1 + block_size].astype(np.int64)) for i in ix])
    return x.to(device), y.to(device)


def get_lr(it):
    if it < warmup:
        return learning_rate * (it + 1) / (warmup + 1)
    ratio = (it - warmup) / (max_iters - warmup)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (learning_rate - min_lr)


@torch.no_grad()
def estimate_loss(model):
    out = {}
    model.eval()
    for split in ("train", "val"):
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            with ctx:
                logits = model(X)
                losses[k] = F.cross_entropy(logits.view(-1, logits.size(-1)), Y.view(-1)).item()
        out[split] = losses.mean()
    model.train()
    return out


def train(model: nn.Module):
    model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, betas=(0.9, 0.95), weight_decay=0.1)
    scaler = torch.amp.GradScaler("cuda", enabled=(dtype == "float16"))
    X, Y = get_batch("train")
    t0 = time.time()
    for it in range(max_iters):
        for group in optimizer.param_groups:
            group["lr"] = get_lr(it)
        if it % eval_interval == 0:
            losses = estimate_loss(model)
            print(f"step {it}: train {losses['train']:.4f}, val {losses['val']:.4f}")
        for micro_step in range(grad_accum):
            with ctx:
                logits = model(X)
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), Y.view(-1))
                loss = loss / grad_accum
            X, Y = get_batch("train")
            scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        if it % 10 == 0:
            dt, t0 = time.time() - t0, time.time()
            print(f"iter {it}: loss {loss.item() * grad_accum:.4f}, {dt * 1000:.0f}ms")
