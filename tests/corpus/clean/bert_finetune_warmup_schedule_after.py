"""Fine-tunes a BERT classifier with pytorch-transformers' warmup schedule, in the right order."""

import torch
from pytorch_transformers import AdamW, BertForSequenceClassification, WarmupLinearSchedule


def train(loader, epochs=3):
    model = BertForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
    optimizer = AdamW(model.parameters(), lr=2e-5)
    scheduler = WarmupLinearSchedule(optimizer, warmup_steps=100, t_total=epochs * len(loader))
    model.train()
    for _ in range(epochs):
        for input_ids, labels in loader:
            loss = model(input_ids, labels=labels)[0]
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            model.zero_grad()
    return model
