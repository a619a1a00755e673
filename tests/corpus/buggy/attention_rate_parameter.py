"""A decoder-only language model whose attention helper takes its dropout rate as a parameter;
the block passes the configured rate in both modes, so the attention dropout stays on in eval."""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    d_model: int = 512
    n_heads: int = 8
    n_layers: int = 6
    vocab: int = 32000
    attention_dropout: float = 0.1


class Block(nn.Module):
    def __init__(self, config: Config):
        super().__init__()
        self.config = config
        self.norm = nn.LayerNorm(config.d_model)
        self.qkv = nn.Linear(config.d_model, 3 * config.d_model, bias=False)
        self.out = nn.Linear(config.d_model, config.d_model, bias=False)
        self.mlp = nn.Sequential(
            nn.Linear(config.d_model, 4 * config.d_model), nn.GELU(), nn.Linear(4 * config.d_model, config.d_model)
        )

    def _attention(self, q, k, v, causal_bias, dropout_p: float = 0.0):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)) + causal_bias
        weights = F.dropout(scores.softmax(dim=-1), p=dropout_p)  # expect: TL011
        return weights @ v

    def forward(self, x, causal_bias):
        b, t, d = x.shape
        h = self.config.n_heads
        q, k, v = self.qkv(self.norm(x)).view(b, t, 3, h, d // h).permute(2, 0, 3, 1, 4)
        att = self._attention(q, k, v, causal_bias, dropout_p=self.config.attention_dropout)
        x = x + self.out(att.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(x)


class LanguageModel(nn.Module):
    def __init__(self, config: Config):
        super().__init__()
        self.embed = nn.Embedding(config.vocab, config.d_model)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.head = nn.Linear(config.d_model, config.vocab, bias=False)

    def forward(self, ids):
        t = ids.size(1)
        bias = torch.full((t, t), float("-inf"), device=ids.device).triu(1)
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x, bias)
        return self.head(x)


@torch.no_grad()
def perplexity(model, batches):
    model.eval()
    losses = [F.cross_entropy(model(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten()) for ids in batches]
    model.train()
    return math.exp(torch.stack(losses).mean().item())
