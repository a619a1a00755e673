"""Layout code that merges permuted dimensions with .view (each raises at runtime)."""
import torch
import torch.nn as nn


class ChannelShuffle(nn.Module):
    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, x):
        b, c, h, w = x.size()
        x = x.view(b, self.groups, c // self.groups, h, w)
        x = torch.transpose(x, 1, 2)
        return x.view(b, c, h, w)  # expect: TL008


class TokenPool(nn.Module):
    def __init__(self, in_channels, dim, n_classes):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, dim, 3, padding=1)
        self.fc = nn.Linear(dim, n_classes)

    def forward(self, images):
        fmap = self.conv(images)
        B, C, H, W = fmap.shape
        tokens = fmap.permute(0, 2, 3, 1)
        # one feature vector per row of the map: (B, H, W, C) -> (B, H, W * C)
        rows = tokens.view(B, H, W * C)  # expect: TL008
        return self.fc(rows.mean(1))


def pairwise_logits(a, b):
    # a: (B, D), b: (B, D) -> a @ b.T, flattened for a BCE over all pairs
    sim = a @ b.T
    return sim.T.view(-1)  # expect: TL008


def ctc_inputs(encoder_out):
    # (B, T, V) -> (T, B, V) log-probs, then flatten time and batch for a frame classifier
    B, T, V = encoder_out.shape
    log_probs = encoder_out.log_softmax(-1).transpose(0, 1)
    return log_probs.view(-1, log_probs.size(-1))  # expect: TL008
