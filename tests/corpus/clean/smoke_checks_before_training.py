"""A character-level tagger: shape checks of the untrained parts, then training and a no-grad evaluation."""

import torch
from torch import nn
from torch.utils.data import DataLoader

from chars import CharDataset, encode_text

VOCAB, HIDDEN, TAGS = 128, 64, 12

embed = nn.Embedding(VOCAB, HIDDEN)
tagger = nn.GRU(HIDDEN, HIDDEN, batch_first=True)
head = nn.Linear(HIDDEN, TAGS)
print(embed, tagger, head)


def test_shapes(text):
    states, _ = tagger(embed(encode_text(text)))
    print("states", tuple(states.shape), "tags", tuple(head(states).shape))


def test_fresh_classifier(features):
    probe = nn.Sequential(nn.Linear(HIDDEN, 32), nn.Tanh(), nn.Linear(32, TAGS))
    print("probe parameters:", sum(p.numel() for p in probe.parameters()))
    print(probe(features).softmax(-1))


test_shapes("hello world")
test_fresh_classifier(torch.linspace(0, 1, HIDDEN)[None])

params = [*embed.parameters(), *tagger.parameters(), *head.parameters()]
optimizer = torch.optim.Adam(params, lr=1e-3)
train_loader = DataLoader(CharDataset("train.txt"), batch_size=32, shuffle=True)
test_loader = DataLoader(CharDataset("test.txt"), batch_size=64)


@torch.no_grad()
def evaluate(loader):
    hits = total = 0
    for chars, tags in loader:
        states, _ = tagger(embed(chars))
        hits += (head(states).argmax(-1) == tags).sum().item()
        total += tags.numel()
    return hits / total


for epoch in range(20):
    for chars, tags in train_loader:
        optimizer.zero_grad()
        states, _ = tagger(embed(chars))
        loss = nn.functional.cross_entropy(head(states).flatten(0, 1), tags.flatten())
        loss.backward()
        optimizer.step()
    print(epoch, evaluate(test_loader))
