"""A GRU encoder-decoder with multi-head attention over the encoder states."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, dropout=0.1):
        super().__init__()
        assert d_model % n_heads == 0
        self.h, self.d_k = n_heads, d_model // n_heads
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * d_model)
        self.o = nn.Linear(d_model, d_model)
        self.dropout = dropout

    def forward(self, query, memory):
        # query: (T, B, D), memory: (S, B, D) -- time-major like nn.GRU's default
        T, B, D = query.shape
        q = self.q(query).transpose(0, 1).contiguous().view(B, T, self.h, self.d_k).transpose(1, 2)
        k, v = self.kv(memory).chunk(2, dim=-1)
        k = k.transpose(0, 1).reshape(B, -1, self.h, self.d_k).transpose(1, 2)
        v = v.transpose(0, 1).reshape(B, -1, self.h, self.d_k).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.d_k)
        att = F.dropout(att.softmax(-1), p=self.dropout, training=self.training)
        out = (att @ v).transpose(1, 2).contiguous().view(B, T, D)
        return self.o(out).transpose(0, 1)


class Seq2Seq(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=256, n_heads=4):
        super().__init__()
        self.src_emb = nn.Embedding(src_vocab, d_model)
        self.tgt_emb = nn.Embedding(tgt_vocab, d_model)
        self.encoder = nn.GRU(d_model, d_model)
        self.decoder = nn.GRU(d_model, d_model)
        self.attn = MultiHeadAttention(d_model, n_heads)
        self.proj = nn.Linear(2 * d_model, tgt_vocab)

    def forward(self, src, tgt):
        memory, h = self.encoder(self.src_emb(src))
        dec, _ = self.decoder(self.tgt_emb(tgt), h)
        ctx = self.attn(dec, memory)
        return self.proj(torch.cat([dec, ctx], dim=-1))


def train(model, loader, pad_idx, epochs=10, lr=1e-3, device="cpu"):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    criterion = nn.CrossEntropyLoss(ignore_index=pad_idx)
    for epoch in range(epochs):
        model.train()
        total = 0.0
        for src, tgt in loader:
            src, tgt = src.to(device), tgt.to(device)
            logits = model(src, tgt[:-1])
            loss = criterion(logits.view(-1, logits.size(-1)), tgt[1:].contiguous().view(-1))
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            total += loss.item()
        print(f"epoch {epoch}: loss {total / len(loader):.3f}")
