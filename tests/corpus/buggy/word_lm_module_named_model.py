"""Word-level language model; the network module is imported as `model` and the name is reused."""

import math

import torch
import torch.nn as nn

import data
import model

corpus = data.Corpus("./data/wikitext-2")
ntokens = len(corpus.dictionary)
model = model.RNNModel("LSTM", ntokens, 400, 1150, 3, dropout=0.4)
model = model.cuda()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=30)


def batches(source, bptt=70):
    for i in range(0, source.size(0) - 1, bptt):
        n = min(bptt, len(source) - 1 - i)
        yield source[i : i + n], source[i + 1 : i + 1 + n].view(-1)


def evaluate(source):
    model.eval()
    total = 0.0
    hidden = model.init_hidden(10)
    for inputs, targets in batches(source):
        output, hidden = model(inputs, hidden)  # expect: TL006
        total += len(inputs) * criterion(model.decoder(output).view(-1, ntokens), targets).item()
    return total / len(source)


for epoch in range(1, 41):
    model.train()
    hidden = model.init_hidden(80)
    for inputs, targets in batches(corpus.train):
        hidden = tuple(h.detach() for h in hidden)
        output, hidden = model(inputs, hidden)
        loss = criterion(model.decoder(output).view(-1, ntokens), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: valid ppl {math.exp(evaluate(corpus.valid)):.2f}")
