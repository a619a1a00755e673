"""The same trainer, but the real optimizer is rebuilt at the top of every epoch: Adam restarts
its moments and step count each time (the evaluation pass's stand-in optimizer is still fine)."""

import torch
import torch.nn as nn


class NoOpOptimizer(torch.optim.Optimizer):
    def __init__(self):
        self.param_groups = [{"lr": 0.0}]

    def step(self, closure=None):
        pass

    def zero_grad(self, set_to_none=True):
        pass


class Seq2Seq(nn.Module):
    def __init__(self, vocab, dim=256):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.drop = nn.Dropout(0.2)
        self.out = nn.Linear(dim, vocab)

    def forward(self, tokens):
        hidden, _ = self.rnn(self.drop(self.embed(tokens)))
        return self.out(hidden)


def run_epoch(model, batches, optimizer, criterion, training):
    total, count = 0.0, 0
    for src, tgt in batches:
        logits = model(src)
        loss = criterion(logits.flatten(0, 1), tgt.flatten())
        if training:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        total += loss.item()
        count += 1
    return total / max(count, 1)


def main(train_batches, valid_batches, vocab, epochs=20):
    model = Seq2Seq(vocab)
    criterion = nn.CrossEntropyLoss(ignore_index=0)
    for epoch in range(epochs):
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)  # expect: TL004
        model.train()
        train_loss = run_epoch(model, train_batches, optimizer, criterion, training=True)
        model.eval()
        with torch.no_grad():
            valid_loss = run_epoch(model, valid_batches, NoOpOptimizer(), criterion, training=False)
        print(f"epoch {epoch}: train {train_loss:.3f} valid {valid_loss:.3f}")
