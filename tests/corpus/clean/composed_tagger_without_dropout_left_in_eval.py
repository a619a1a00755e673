"""A tagger composed from a bag-of-embeddings encoder: no dropout or batch norm anywhere, so the
evaluation's `eval()` that is never undone changes nothing in training."""

import torch
import torch.nn.functional as F
from torch import nn


class BagEncoder(nn.Module):
    def __init__(self, vocab_size, width):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, width)
        self.mix = nn.Linear(width, width)

    def forward(self, tokens):
        return torch.tanh(self.mix(self.embed(tokens)))


class Tagger(nn.Module):
    def __init__(self, encoder, width, tags):
        super().__init__()
        self.encoder = encoder
        self.classify = nn.Linear(width, tags)

    def forward(self, tokens):
        return self.classify(self.encoder(tokens))


def dev_loss(model, batches):
    model.eval()
    with torch.no_grad():
        return sum(F.cross_entropy(model(x).transpose(1, 2), y).item() for x, y in batches) / len(batches)


def main(train_batches, dev_batches, epochs=20):
    model = Tagger(BagEncoder(30000, 300), width=300, tags=45)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    for epoch in range(epochs):
        for x, y in train_batches:
            optimizer.zero_grad()
            F.cross_entropy(model(x).transpose(1, 2), y).backward()
            optimizer.step()
        print(f"epoch {epoch}: dev loss {dev_loss(model, dev_batches):.3f}")
