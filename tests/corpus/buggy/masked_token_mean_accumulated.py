"""Supervised fine-tuning with per-token losses averaged per micro-batch and accumulated undivided.

`masked_token_mean` reduces each micro-batch to its own token mean (empty masks guarded), and the
training loop accumulates `accumulation_steps` of these means without dividing: every update is
`accumulation_steps` times the window's mean gradient.
"""
import torch
import torch.nn.functional as F


def masked_token_mean(token_loss, mask):
    picked = token_loss * mask
    return picked.flatten(1).mean(-1).mean() if picked.ndim > 1 else torch.where(mask > 0, picked, 0.0).mean()


def sft_update(model, optim, loader, accumulation_steps):
    for step, (input_ids, labels, mask) in enumerate(loader):
        logits = model(input_ids).logits
        token_loss = F.cross_entropy(logits.transpose(1, 2), labels, reduction="none")
        loss = masked_token_mean(token_loss, mask)
        loss.backward()  # expect: TL009
        per_sample = F.cross_entropy(logits.transpose(1, 2), labels, reduction="none").mean(-1)
        per_sample.mean().backward()  # expect: TL009
        if (step + 1) % accumulation_steps == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optim.step()
            optim.zero_grad(set_to_none=True)
