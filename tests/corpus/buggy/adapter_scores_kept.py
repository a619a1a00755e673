"""The same library's scoring helper keeps what the loaded model computes on a validation set,
with autograd on."""

import torch
from peft import PeftModel
from transformers import AutoModelForCausalLM


def evaluate_adapter(adapter_dir, val_loader):
    base = AutoModelForCausalLM.from_pretrained("gpt2")
    model = PeftModel.from_pretrained(base, adapter_dir)
    model.eval()
    model(**next(iter(val_loader)))  # warm-up, output dropped
    losses = []
    for batch in val_loader:
        out = model(**batch)  # expect: TL006
        losses.append(out.loss.item())
    return sum(losses) / len(losses)
