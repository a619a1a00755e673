"""Window NER tagger: dropout only when the forward is asked for it (`regularize=True` in training)."""

import torch
import torch.nn as nn

WINDOW = 2


class WindowTagger(nn.Module):
    def __init__(self, vocab_size, dim, hidden, n_tags):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.hidden = nn.Linear(dim * (2 * WINDOW + 1), hidden)
        self.scores = nn.Linear(hidden, n_tags)
        self.act = nn.ReLU()
        self.drop = nn.Dropout(0.3)

    def forward(self, windows, regularize=False):
        x = self.embed(windows).flatten(1)
        x = self.act(self.hidden(x))
        if regularize:
            x = self.drop(x)
        return self.scores(x)


def train(model, batches, epochs=3):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()
    model.train()
    for _ in range(epochs):
        for windows, tags in batches:
            optimizer.zero_grad()
            loss = criterion(model(windows, regularize=True), tags)
            loss.backward()
            optimizer.step()


def evaluate(model, samples):
    right = 0
    with torch.no_grad():
        for window, tag in samples:
            right += int(model(window.unsqueeze(0)).argmax(1).item() == tag)
    return right / max(len(samples), 1)


if __name__ == "__main__":
    tagger = WindowTagger(10000, 50, 300, 9)
    train(tagger, train_batches)
    print(evaluate(tagger, test_samples))
