"""Gradient accumulation over micro-batches with the loss never divided, plus a leaky running loss."""
import torch
import torch.nn.functional as F


def train(model, loader, optimizer, accum_steps=8, max_steps=1000):
    model.train()
    it = iter(loader)
    running = 0.0
    for step in range(max_steps):
        for micro in range(accum_steps):
            x, y = next(it)
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            loss.backward()  # expect: TL009
            running += loss  # expect: TL010
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step % 100 == 0:
            print(f"step {step}: loss {running / (100 * accum_steps):.4f}")
            running = 0.0
