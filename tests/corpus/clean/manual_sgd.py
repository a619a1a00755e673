"""Word-level LSTM language model trained with hand-written SGD and truncated BPTT."""
import math

import torch
import torch.nn as nn


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp=200, nhid=200, nlayers=2, dropout=0.2):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nlayers, self.nhid = nlayers, nhid

    def forward(self, input, hidden):
        output, hidden = self.rnn(self.drop(self.encoder(input)), hidden)
        return self.decoder(self.drop(output)), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def train_epoch(model, train_data, ntokens, lr, bptt=35, clip=0.25, batch_size=20):
    model.train()
    criterion = nn.NLLLoss()
    total_loss = 0.0
    hidden = model.init_hidden(batch_size)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
        seq_len = min(bptt, len(train_data) - 1 - i)
        data, targets = train_data[i:i + seq_len], train_data[i + 1:i + 1 + seq_len].view(-1)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(torch.log_softmax(output, dim=-1).view(-1, ntokens), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        total_loss += loss.item()
        if batch % 200 == 0 and batch > 0:
            cur = total_loss / 200
            print(f"batch {batch}: loss {cur:.2f} ppl {math.exp(cur):.2f}")
            total_loss = 0.0


def evaluate(model, data_source, ntokens, bptt=35, batch_size=10):
    model.eval()
    total = 0.0
    hidden = model.init_hidden(batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, bptt):
            seq_len = min(bptt, len(data_source) - 1 - i)
            data, targets = data_source[i:i + seq_len], data_source[i + 1:i + 1 + seq_len].view(-1)
            output, hidden = model(data, hidden)
            hidden = repackage_hidden(hidden)
            total += seq_len * nn.functional.nll_loss(
                torch.log_softmax(output, -1).view(-1, ntokens), targets).item()
    return total / (len(data_source) - 1)


def main(train_data, val_data, ntokens, epochs=40, lr=20.0):
    model = RNNModel(ntokens)
    best = None
    for epoch in range(epochs):
        train_epoch(model, train_data, ntokens, lr)
        val_loss = evaluate(model, val_data, ntokens)
        print(f"epoch {epoch}: val ppl {math.exp(val_loss):.2f}")
        if best is None or val_loss < best:
            best = val_loss
        else:
            lr /= 4.0
