"""Trains a sentiment head on a frozen pretrained encoder; the model's own `train_custom()` prepares
each epoch, switching the head (the only trained part) back to train mode."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers import AutoModel


class SentimentProbe(nn.Module):
    def __init__(self, encoder_name, n_labels):
        super().__init__()
        self.encoder = AutoModel.from_pretrained(encoder_name)
        hidden = self.encoder.config.hidden_size
        self.head = nn.Sequential(nn.Dropout(0.1), nn.Linear(hidden, n_labels))

    def train_custom(self):
        for param in self.encoder.parameters():
            param.requires_grad = False
        self.head.train()

    def forward(self, input_ids, attention_mask):
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        mask = attention_mask.unsqueeze(-1).float()
        return self.head((hidden * mask).sum(1) / mask.sum(1))


def train_epoch(probe, loader, optimizer, device):
    probe.train_custom()
    for batch in loader:
        batch = {k: v.to(device) for k, v in batch.items()}
        optimizer.zero_grad()
        logits = probe(batch["input_ids"], batch["attention_mask"])
        F.cross_entropy(logits, batch["labels"]).backward()
        optimizer.step()


def accuracy(probe, loader, device):
    probe.eval()
    correct = total = 0
    with torch.no_grad():
        for batch in loader:
            batch = {k: v.to(device) for k, v in batch.items()}
            predicted = probe(batch["input_ids"], batch["attention_mask"]).argmax(-1)
            correct += (predicted == batch["labels"]).sum().item()
            total += batch["labels"].numel()
    return correct / total


def main(train_loader, val_loader, epochs=5, device="cuda"):
    probe = SentimentProbe("bert-base-uncased", n_labels=2).to(device)
    optimizer = torch.optim.AdamW(probe.head.parameters(), lr=5e-4)
    for epoch in range(epochs):
        train_epoch(probe, train_loader, optimizer, device)
        print(f"epoch {epoch}: val accuracy {accuracy(probe, val_loader, device):.3f}")
