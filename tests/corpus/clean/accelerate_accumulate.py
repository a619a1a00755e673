"""Fine-tune a causal LM with accelerate's gradient accumulation."""
import math

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM, get_cosine_schedule_with_warmup


def evaluate(accelerator, model, loader):
    model.eval()
    losses = []
    for batch in loader:
        with torch.no_grad():
            out = model(**batch)
        losses.append(accelerator.gather_for_metrics(out.loss.repeat(batch["input_ids"].size(0))))
    loss = torch.cat(losses).mean()
    return math.exp(loss.item())


def main(train_set, val_set, epochs=3, accum=8):
    accelerator = Accelerator(gradient_accumulation_steps=accum, mixed_precision="bf16")
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.01)
    train_loader = DataLoader(train_set, batch_size=4, shuffle=True)
    val_loader = DataLoader(val_set, batch_size=8)
    steps = epochs * math.ceil(len(train_loader) / accum)
    scheduler = get_cosine_schedule_with_warmup(optimizer, 100, steps)
    model, optimizer, train_loader, val_loader, scheduler = accelerator.prepare(
        model, optimizer, train_loader, val_loader, scheduler
    )

    for epoch in range(epochs):
        model.train()
        running = 0.0
        for step, batch in enumerate(train_loader):
            with accelerator.accumulate(model):
                outputs = model(**batch)
                loss = outputs.loss
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
            running += loss.detach().float()
        ppl = evaluate(accelerator, model, val_loader)
        accelerator.print(f"epoch {epoch}: train loss {running.item() / len(train_loader):.3f}, ppl {ppl:.2f}")

    accelerator.wait_for_everyone()
    accelerator.save_model(model, "checkpoint")


if __name__ == "__main__":
    from datasets import load_from_disk

    data = load_from_disk("tokenized")
    main(data["train"], data["validation"])
