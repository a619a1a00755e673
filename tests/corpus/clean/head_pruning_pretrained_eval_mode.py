"""Head-importance scoring for pruning a pretrained language model: `from_pretrained` returns
the model in eval mode and nothing here switches it back, so the scoring passes run without
dropout."""
import argparse

import torch
from torch.utils.data import DataLoader, TensorDataset
from transformers import GPT2LMHeadModel


def head_importance(model, eval_loader, device, head_mask=None):
    n_layers, n_heads = model.config.n_layer, model.config.n_head
    if head_mask is None:
        head_mask = torch.ones(n_layers, n_heads, device=device)
    head_mask.requires_grad_(True)
    importance = torch.zeros(n_layers, n_heads, device=device)
    total_loss = 0.0
    for (input_ids,) in eval_loader:
        input_ids = input_ids.to(device)
        loss = model(input_ids, labels=input_ids, head_mask=head_mask).loss
        loss.backward()  # gradients of the mask only: no optimizer step
        importance += head_mask.grad.abs().detach()
        head_mask.grad = None
        total_loss += loss.item()
    return importance / importance.norm(), total_loss / len(eval_loader)


def mask_least_important(model, eval_loader, device, fraction):
    importance, baseline = head_importance(model, eval_loader, device)
    threshold = importance.flatten().kthvalue(int(fraction * importance.numel())).values
    mask = (importance > threshold).float()
    _, loss = head_importance(model, eval_loader, device, head_mask=mask)
    print(f"loss {baseline:.3f} -> {loss:.3f} with {int(mask.sum())} heads kept")
    return mask


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="gpt2")
    parser.add_argument("--data", required=True)
    parser.add_argument("--fraction", type=float, default=0.1)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = GPT2LMHeadModel.from_pretrained(args.model)
    model.to(device)
    if torch.cuda.device_count() > 1:
        model = torch.nn.DataParallel(model)
    eval_loader = DataLoader(TensorDataset(torch.load(args.data)), batch_size=8)
    mask = mask_least_important(model, eval_loader, device, args.fraction)
    torch.save(mask, "head_mask.pt")


if __name__ == "__main__":
    main()
