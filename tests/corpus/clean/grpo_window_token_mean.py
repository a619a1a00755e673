"""Policy-gradient fine-tuning whose accumulated gradient is the token mean of the whole window.

The token counts of every micro-batch of a window are added up before the micro-steps, and each
micro-batch's summed token loss is divided by its window's count through a masked-mean helper that
guards an empty mask. A second objective sums per-token losses (`reduction="none"`, masked, `.sum()`)
over an accumulation of micro-batches: the sum over the nominal batch, on purpose.
"""
import torch
import torch.nn.functional as F


def masked_mean(values, mask, axis=None, denominator=None):
    numerator = (values * mask).sum(dim=axis)
    denom = mask.sum(dim=axis) if denominator is None else denominator
    if isinstance(denom, torch.Tensor):
        result = torch.where(denom > 0, numerator / denom, torch.zeros_like(numerator))
    else:
        result = numerator / denom if denom > 0 else torch.zeros_like(numerator)
    return result.flatten(1).mean(-1) if result.ndim > 1 else result


def window_token_counts(response_masks, accumulation_steps):
    counts = {}
    for i, mask in enumerate(response_masks):
        start = (i // accumulation_steps) * accumulation_steps
        counts[start] = counts.get(start, 0.0) + mask[:, 1:].sum().item()
    return counts


def policy_update(policy, optim, queries, response_masks, advantages, old_logprobs, accumulation_steps, clip=0.2):
    counts = window_token_counts(response_masks, accumulation_steps)
    for sample_idx in range(len(queries)):
        logits = policy(queries[sample_idx]).logits[:, :-1]
        logprobs = torch.log_softmax(logits, dim=-1).gather(-1, queries[sample_idx][:, 1:, None]).squeeze(-1)
        ratio = torch.exp(logprobs - old_logprobs[sample_idx])
        adv = advantages[sample_idx][:, 1:]
        pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - clip, 1 + clip))
        window_start = (sample_idx // accumulation_steps) * accumulation_steps
        loss = masked_mean(pg_loss, response_masks[sample_idx][:, 1:], None, counts[window_start])
        loss.backward()
        if (sample_idx + 1) % accumulation_steps == 0:
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            optim.step()
            optim.zero_grad(set_to_none=True)


def sft_update(model, optim, loader, accumulation_steps):
    for step, (input_ids, labels, mask) in enumerate(loader):
        logits = model(input_ids).logits
        token_loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="none")
        (token_loss * mask.flatten()).sum().backward()
        if (step + 1) % accumulation_steps == 0:
            optim.step()
            optim.zero_grad(set_to_none=True)
