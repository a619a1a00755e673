"""A unit test that checks every trainable weight moves after one step, for each configuration:
each case builds its own module and its own optimizer, so no gradient or optimizer state carries
over from one case to the next (no TL001, no TL004)."""
import itertools
import unittest
from copy import deepcopy

import torch
import torch.nn as nn


class Embeddings(nn.Module):
    def __init__(self, vocab, dim, position_encoding=False, freeze=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.pe = nn.Parameter(torch.zeros(512, dim), requires_grad=position_encoding and not freeze)

    def forward(self, tokens):
        return self.emb(tokens) + self.pe[: tokens.size(1)]


class TestEmbeddings(unittest.TestCase):
    SIZES = [(10, 8), (100, 16)]
    OPTIONS = [{"position_encoding": False}, {"position_encoding": True}, {"position_encoding": True, "freeze": True}]

    def test_trainable_params_update(self):
        for (vocab, dim), options in itertools.product(self.SIZES, self.OPTIONS):
            emb = Embeddings(vocab, dim, **options)
            for name, p in emb.named_parameters():
                if "weight" in name and p.dim() > 1:
                    nn.init.xavier_uniform_(p)
            trainable = {n: p for n, p in emb.named_parameters() if p.requires_grad}
            old = deepcopy(trainable)
            emb(torch.randint(0, vocab, (3, 7))).mean().backward()
            optimizer = torch.optim.SGD(trainable.values(), lr=1.0)
            optimizer.step()
            for name in old:
                self.assertTrue(trainable[name].ne(old[name]).any(), name)


if __name__ == "__main__":
    unittest.main()
