"""An accelerate fine-tuning loop that never clears gradients."""
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader
from transformers import AutoModelForTokenClassification


def train(train_set, eval_set, epochs=3):
    accelerator = Accelerator()
    model = AutoModelForTokenClassification.from_pretrained("roberta-base", num_labels=9)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-5)
    train_loader = DataLoader(train_set, batch_size=16, shuffle=True)
    eval_loader = DataLoader(eval_set, batch_size=32)
    model, optimizer, train_loader, eval_loader = accelerator.prepare(model, optimizer, train_loader, eval_loader)
    for epoch in range(epochs):
        model.train()
        for batch in train_loader:
            outputs = model(**batch)
            accelerator.backward(outputs.loss)
            accelerator.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()  # expect: TL001
        model.eval()
        correct = total = 0
        for batch in eval_loader:
            with torch.no_grad():
                logits = model(**batch).logits
            preds, labels = accelerator.gather_for_metrics((logits.argmax(-1), batch["labels"]))
            mask = labels != -100
            correct += (preds[mask] == labels[mask]).sum().item()
            total += mask.sum().item()
        accelerator.print(f"epoch {epoch}: token accuracy {correct / total:.4f}")
