"""LM fine-tuning that normalises the summed loss by the tokens of the whole accumulation window."""
import torch
import torch.nn.functional as F


def count_tokens(batches):
    return sum(int((b["labels"] != -100).sum()) for b in batches)


def train(model, loader, val_batches, optimizer, epochs=2, accum=4, log_every=100):
    step = 0
    ema_loss = None
    for epoch in range(epochs):
        model.train()
        window = []
        for batch in loader:
            window.append(batch)
            if len(window) < accum:
                continue
            n_tokens = count_tokens(window)
            optimizer.zero_grad(set_to_none=True)
            for micro in window:
                logits = model(micro["input_ids"]).logits
                loss = F.cross_entropy(logits.flatten(0, 1), micro["labels"].flatten(),
                                       ignore_index=-100, reduction="sum") / n_tokens
                loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            window = []
            step += 1
            ema_loss = loss.item() if ema_loss is None else 0.98 * ema_loss + 0.02 * loss.item()
            if step % log_every == 0:
                model.eval()
                with torch.no_grad():
                    val = sum(model(b["input_ids"], labels=b["labels"]).loss.item() for b in val_batches)
                model.train()
                print(f"step {step}: train {ema_loss:.4f} val {val / len(val_batches):.4f}")


def train_with_finally(model, loader, val_loader, optimizer, epochs=3):
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
        model.eval()
        try:
            with torch.no_grad():
                acc = sum((model(x).argmax(-1) == y).float().mean().item() for x, y in val_loader)
            print(epoch, acc / len(val_loader))
        finally:
            model.train()
