"""A small character-level transformer: dropout guarded by the training flag, and a sampling
method whose dropout is a generation option (it never trains, so the dropout is meant to run)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads, attn_pdrop=0.1, resid_pdrop=0.1):
        super().__init__()
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
        self.heads = heads
        self.attn_pdrop, self.resid_pdrop = attn_pdrop, resid_pdrop

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.ones(T, T, device=x.device).tril()
        att = att.masked_fill(mask == 0, float("-inf")).softmax(-1)
        if self.training and self.attn_pdrop > 0:
            att = F.dropout(att, p=self.attn_pdrop)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        y = self.c_proj(y)
        return F.dropout(y, self.resid_pdrop) if self.training else y


class TinyGPT(nn.Module):
    def __init__(self, vocab, dim=128, heads=4, layers=2, block=64, embd_pdrop=0.1):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(1, block, dim))
        self.blocks = nn.ModuleList(CausalSelfAttention(dim, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.embd_pdrop = embd_pdrop

    def embed(self, idx):
        x = self.tok(idx) + self.pos[:, : idx.size(1)]
        if not self.training:
            return x
        return F.dropout(x, self.embd_pdrop)

    def forward(self, idx):
        x = self.embed(idx)
        for block in self.blocks:
            x = x + block(x)
        return self.head(self.ln(x))

    @torch.no_grad()
    def generate(self, idx, steps, temperature=1.0, token_dropout=0.0):
        for _ in range(steps):
            x = self.tok(idx[:, -self.pos.size(1) :]) + self.pos[:, : min(idx.size(1), self.pos.size(1))]
            # Randomised decoding: drop input embeddings to diversify the samples.
            x = F.dropout(x, p=token_dropout)
            for block in self.blocks:
                x = x + block(x)
            logits = self.head(self.ln(x))[:, -1] / temperature
            idx = torch.cat([idx, torch.multinomial(logits.softmax(-1), 1)], dim=1)
        return idx


def train(model, data, steps=1000, block=64, batch=32):
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    model.train()
    for step in range(steps):
        ix = torch.randint(len(data) - block - 1, (batch,))
        x = torch.stack([data[i : i + block] for i in ix])
        y = torch.stack([data[i + 1 : i + block + 1] for i in ix])
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return model


if __name__ == "__main__":
    text = open("input.txt").read()
    chars = sorted(set(text))
    data = torch.tensor([chars.index(c) for c in text])
    model = train(TinyGPT(len(chars)), data)
    model.eval()
    print(model.generate(data[:1][None], 200, token_dropout=0.1))
