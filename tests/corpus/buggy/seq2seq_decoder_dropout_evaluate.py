"""Greedy decoding after training: the encoder has no mode-dependent layer, the decoder a 2-layer GRU
with dropout 0.05, and nothing switches to eval mode."""

import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, vocab, hidden, n_layers=1):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.gru = nn.GRU(hidden, hidden, n_layers)

    def forward(self, x, h):
        return self.gru(self.embedding(x), h)


class Decoder(nn.Module):
    def __init__(self, hidden, vocab, n_layers=1, dropout_p=0.1):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.gru = nn.GRU(hidden, hidden, n_layers, dropout=dropout_p)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, x, h):
        y, h = self.gru(self.embedding(x), h)
        return self.out(y), h


encoder = Encoder(1000, 256, 2)
decoder = Decoder(256, 1000, 2, dropout_p=0.05)
encoder_opt = torch.optim.SGD(encoder.parameters(), lr=0.01)
decoder_opt = torch.optim.SGD(decoder.parameters(), lr=0.01)

for src, tgt in pairs:
    encoder_opt.zero_grad()
    decoder_opt.zero_grad()
    _, h = encoder(src, None)
    out, _ = decoder(tgt, h)
    loss = nn.functional.cross_entropy(out.flatten(0, 1), tgt.flatten())
    loss.backward()
    encoder_opt.step()
    decoder_opt.step()


@torch.no_grad()
def evaluate(sentence, max_length=10):
    _, h = encoder(sentence, None)  # expect: TL005
    token = torch.zeros(1, 1, dtype=torch.long)
    words = []
    for _ in range(max_length):
        out, h = decoder(token, h)
        token = out.argmax(-1)
        words.append(token.item())
    return words


print(evaluate(test_sentence))
