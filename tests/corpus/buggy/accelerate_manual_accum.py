"""An accelerate loop that accumulates by hand (no gradient_accumulation_steps) without dividing the loss."""
import torch
from accelerate import Accelerator
from transformers import AutoModelForSequenceClassification


def main(train_loader, epochs=3, accum=4):
    accelerator = Accelerator(mixed_precision="bf16")
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, 1.0, 0.0, total_iters=1000)
    model, optimizer, train_loader, scheduler = accelerator.prepare(model, optimizer, train_loader, scheduler)
    for epoch in range(epochs):
        model.train()
        for step, batch in enumerate(train_loader):
            outputs = model(**batch)
            accelerator.backward(outputs.loss)  # expect: TL009
            if (step + 1) % accum == 0:
                scheduler.step()  # expect: TL015
                optimizer.step()
                optimizer.zero_grad()
        accelerator.print(f"epoch {epoch} done")
