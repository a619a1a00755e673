"""A character-level tagger: a shape check of the untrained parts, training, then tagging new text with autograd on."""

import torch
from torch import nn
from torch.utils.data import DataLoader

from chars import CharDataset, decode_tags, encode_text

VOCAB, HIDDEN, TAGS = 128, 64, 12

embed = nn.Embedding(VOCAB, HIDDEN)
tagger = nn.GRU(HIDDEN, HIDDEN, batch_first=True)
head = nn.Linear(HIDDEN, TAGS)


def predict_tags(text):
    states, _ = tagger(embed(encode_text(text)))  # expect: TL006
    return decode_tags(head(states).argmax(-1))


print(predict_tags("untrained output"))

params = [*embed.parameters(), *tagger.parameters(), *head.parameters()]
optimizer = torch.optim.Adam(params, lr=1e-3)
train_loader = DataLoader(CharDataset("train.txt"), batch_size=32, shuffle=True)

for epoch in range(20):
    for chars, tags in train_loader:
        optimizer.zero_grad()
        states, _ = tagger(embed(chars))
        loss = nn.functional.cross_entropy(head(states).flatten(0, 1), tags.flatten())
        loss.backward()
        optimizer.step()

for line in open("sentences.txt"):
    print(predict_tags(line.strip()))
