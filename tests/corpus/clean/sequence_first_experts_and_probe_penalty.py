"""A CLIP-style text tower kept sequence-first: the encoder permutes its batch-first tokens to
(L, N, D) before the residual blocks, and a routed block permutes them back to batch-first to
flatten one row per sample, which is contiguous again. A binary-accuracy helper (a library
function for callers elsewhere) transposes a thresholded (N, 1) score column, and an invariance penalty differentiates the loss against a
dummy scale that nothing trains."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import autograd


class RoutedBlock(nn.Module):
    def __init__(self, width, seq_len, experts):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, 4)
        self.router = nn.Linear(width * seq_len, experts)
        self.experts = nn.ModuleList(nn.Linear(width, width) for _ in range(experts))

    def forward(self, x):
        h = self.norm(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        rows = x.permute(1, 0, 2).view(x.shape[1], -1)
        choice = self.router(rows).argmax(-1)
        mixed = torch.stack([self.experts[int(e)](x[:, i]) for i, e in enumerate(choice)], dim=1)
        return x + mixed


class TextTower(nn.Module):
    def __init__(self, vocab, width, seq_len, depth, experts):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.blocks = nn.Sequential(*[RoutedBlock(width, seq_len, experts) for _ in range(depth)])

    def forward(self, tokens):
        x = self.embed(tokens)
        x = x.permute(1, 0, 2)  # NLD -> LND
        x = self.blocks(x)
        return x.permute(1, 0, 2)[:, 0]


def binary_accuracy(scores, target):
    pred = (scores >= 0.5).float().t().view(-1)
    return pred.eq(target.view(-1)).float().mean().item() * 100.0


class InvariancePenalty(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.tensor(1.0).requires_grad_()

    def forward(self, logits, labels):
        first = F.cross_entropy(logits[::2] * self.scale, labels[::2])
        second = F.cross_entropy(logits[1::2] * self.scale, labels[1::2])
        grad_first = autograd.grad(first, [self.scale], create_graph=True)[0]
        grad_second = autograd.grad(second, [self.scale], create_graph=True)[0]
        return (grad_first * grad_second).sum()


def train(loader, epochs=1):
    tower = TextTower(1000, 64, 16, 2, 4)
    head = nn.Linear(64, 1)
    penalty = InvariancePenalty()
    params = list(tower.parameters()) + list(head.parameters())
    optimizer = torch.optim.AdamW(params, lr=3e-4)
    for _ in range(epochs):
        for tokens, labels in loader:
            logits = head(tower(tokens))
            loss = F.binary_cross_entropy_with_logits(logits.squeeze(1), labels.float())
            two_way = torch.cat([-logits, logits], dim=1)
            loss = loss + 0.1 * penalty(two_way, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(loss.item())
