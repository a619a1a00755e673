"""Character-level GRU language model validated each epoch without `model.eval()`: its only
mode-dependent setting is the GRU's dropout, which PyTorch applies between stacked layers only,
and this model has one layer, so train and eval mode compute the same."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

NUM_LAYERS = 1


class CharGRU(nn.Module):
    def __init__(self, vocab_size, hidden_size, num_layers=NUM_LAYERS, dropout=0.25):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, num_layers, dropout=dropout, batch_first=True)
        self.proj = nn.Linear(hidden_size, vocab_size)

    def forward(self, tokens):
        out, _ = self.gru(self.embed(tokens))
        return self.proj(out)


def evaluate(model, loader):
    total, count = 0.0, 0
    with torch.no_grad():
        for tokens, targets in loader:
            logits = model(tokens)
            total += F.cross_entropy(logits.transpose(1, 2), targets, reduction="sum").item()
            count += targets.numel()
    return total / count


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=20)
    args = parser.parse_args()
    corpus = torch.randint(0, 96, (200_000,))
    chunks = corpus[: 199_936].view(-1, 65)
    train_set = torch.utils.data.TensorDataset(chunks[:2800, :-1], chunks[:2800, 1:])
    val_set = torch.utils.data.TensorDataset(chunks[2800:, :-1], chunks[2800:, 1:])
    train_loader = torch.utils.data.DataLoader(train_set, batch_size=32, shuffle=True)
    val_loader = torch.utils.data.DataLoader(val_set, batch_size=64)
    model = CharGRU(96, 256)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    for epoch in range(args.epochs):
        for tokens, targets in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(tokens).transpose(1, 2), targets)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        print(f"epoch {epoch}: val nll {evaluate(model, val_loader):.3f}")


if __name__ == "__main__":
    main()
