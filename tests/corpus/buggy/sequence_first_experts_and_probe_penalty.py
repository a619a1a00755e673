"""The routed block flattens projected tokens made inside the block (contiguous, sequence-first):
permuting them to batch-first and viewing raises. A multi-label accuracy transposes thresholded
scores of every label, and the penalty's scale, probed with `autograd.grad`, is also tuned by an
optimizer of its own, so a checkpoint loses it."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import autograd


class RoutedBlock(nn.Module):
    def __init__(self, width, seq_len, experts):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.proj = nn.Linear(width, width)
        self.router = nn.Linear(width * seq_len, experts)

    def forward(self, x):
        h = self.proj(self.norm(x))
        rows = h.permute(1, 0, 2).view(h.shape[1], -1)  # expect: TL008
        return x + h * self.router(rows).softmax(-1).max(-1).values[None, :, None]


def multilabel_accuracy(head, feats, target):
    pred = (torch.sigmoid(head(feats)) >= 0.5).float().t().view(-1)  # expect: TL008
    return pred.eq(target.t().reshape(-1)).float().mean().item() * 100.0


class TunedPenalty(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.tensor(1.0).requires_grad_()  # expect: TL013
        self.scale_opt = torch.optim.SGD([self.scale], lr=0.01)

    def forward(self, logits, labels):
        loss = F.cross_entropy(logits * self.scale, labels)
        grad = autograd.grad(loss, [self.scale], create_graph=True)[0]
        return grad.pow(2).sum()
