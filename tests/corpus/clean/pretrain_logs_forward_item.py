"""Masked-LM pretraining where the model's forward hands back the loss and a logging float."""

import numpy as np
import torch
import torch.nn as nn


class MaskedLM(nn.Module):
    def __init__(self, encoder, hidden, vocab):
        super().__init__()
        self.encoder = encoder
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, tokens, targets):
        logits = self.decoder(self.encoder(tokens))
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return loss, loss.item()


def fit(net, opt, batches, log_every=100):
    net = nn.parallel.DistributedDataParallel(net.cuda())
    window = []
    for step, (tokens, targets) in enumerate(batches):
        loss, value = net(tokens, targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
        window.append(value)
        if step % log_every == 0:
            print(step, np.mean(window))


def main(encoder, batches):
    net = MaskedLM(encoder, 512, 32000)
    opt = torch.optim.Adam(net.parameters(), lr=3e-4)
    fit(net, opt, batches)
