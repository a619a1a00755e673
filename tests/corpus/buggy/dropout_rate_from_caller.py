"""Character-level language model whose input dropout rate is an argument of forward: the training
step passes the configured rate and the validation passes it too (a forgotten 0.), after model.eval()."""

import argparse

import torch
import torch.nn.functional as F
from torch import nn


class CharLM(nn.Module):
    def __init__(self, vocab, dim=128):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, dim, batch_first=True)
        self.head = nn.Linear(dim, vocab)

    def forward(self, chars, input_drop, state=None):
        x = F.dropout(self.embed(chars), input_drop)  # expect: TL011
        out, state = self.lstm(x, state)
        return self.head(out), state


def train_step(model, optimizer, chars, targets, rate):
    logits, _ = model(chars, rate)
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


@torch.no_grad()
def validate(model, batches, args_rate):
    model.eval()
    total = 0.0
    for chars, targets in batches:
        logits, _ = model(chars, args_rate)
        total += F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1)).item()
    model.train()
    return total / max(len(batches), 1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dropout", type=float, default=0.3)
    args = parser.parse_args()
    data = torch.load("corpus.pt")
    model = CharLM(data["vocab"])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(10):
        for chars, targets in data["train"]:
            train_step(model, optimizer, chars, targets, args.dropout)
        print(epoch, validate(model, data["valid"], args.dropout))


if __name__ == "__main__":
    main()
