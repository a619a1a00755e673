"""An encoder built from a toolkit's layer classes, kept in plain Python lists: their weights
never reach `model.parameters()`, `.to(device)` or `state_dict()`."""
import torch
import torch.nn as nn
from fairseq.modules import FairseqDropout, LayerNorm, MultiheadAttention


class Encoder(nn.Module):
    def __init__(self, args, embed_tokens):
        super().__init__()
        dim = embed_tokens.embedding_dim
        self.embed_tokens = embed_tokens
        self.attn = []  # expect: TL013
        self.dropouts = []  # expect: TL013
        for i in range(args.encoder_layers):
            self.attn.append(MultiheadAttention(dim, args.encoder_attention_heads, dropout=args.attention_dropout))
            self.dropouts.append(FairseqDropout(args.dropout, module_name=self.__class__.__name__))
        self.norms = [LayerNorm(dim) for _ in range(args.encoder_layers)]  # expect: TL013

    def forward(self, src_tokens):
        x = self.embed_tokens(src_tokens).transpose(0, 1)
        for attn, drop, norm in zip(self.attn, self.dropouts, self.norms):
            y, _ = attn(query=x, key=x, value=x)
            x = norm(x + drop(y))
        return x


def train(model, batches, epochs=10):
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-4)
    for epoch in range(epochs):
        for src, tgt in batches:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(src), tgt)
            loss.backward()
            optimizer.step()
