"""A sequence tagger composed from an encoder handed to its constructor; validation each epoch."""

import torch
import torch.nn.functional as F
from torch import nn


class RecurrentEncoder(nn.Module):
    def __init__(self, vocab_size, width, layers=2, dropout=0.25):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, width)
        self.rnn = nn.GRU(width, width, layers, dropout=dropout, batch_first=True)

    def forward(self, tokens):
        return self.rnn(self.embed(tokens))[0]


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
    model = Tagger(RecurrentEncoder(30000, 300), width=300, tags=45)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    for epoch in range(epochs):
        for x, y in train_batches:
            optimizer.zero_grad()
            F.cross_entropy(model(x).transpose(1, 2), y).backward()
            optimizer.step()
        print(f"epoch {epoch}: dev loss {dev_loss(model, dev_batches):.3f}")  # expect: TL007
