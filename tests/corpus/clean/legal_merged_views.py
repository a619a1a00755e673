"""Views after a permute that merge only dimensions still adjacent in memory (all legal), and a
flatten that runs only on XLA, whose tensors always report contiguous strides."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class PatchTokens(nn.Module):
    """Conv stem -> (B, H*W, C) tokens with a learned 2-D position grid."""

    def __init__(self, in_ch=3, dim=192, patch=16, grid=14):
        super().__init__()
        self.proj = nn.Conv2d(in_ch, dim, patch, stride=patch)
        self.pos = nn.Parameter(torch.zeros(1, dim, grid, grid))
        self.dim = dim

    def forward(self, images):
        x = self.proj(images)
        b, c, h, w = x.shape
        tokens = x.permute(0, 2, 3, 1).view(b, h * w, c)
        pos = F.interpolate(self.pos, size=(h, w), mode="bilinear", align_corners=False)
        pos = pos.permute(0, 2, 3, 1).view(1, -1, self.dim)
        return tokens + pos


def clip_to_frames(clip):
    """(T, H, W, C) uint8 video -> (C, T * H, W) so that 2-D image transforms apply to the stack."""
    clip = clip.permute(3, 0, 1, 2)
    c, t, h, w = clip.shape
    return clip.view(c, t * h, w), (t, h)


def gather_for_loss(logits, device):
    # (B, T, V) -> (T, B, V) for the CTC loss; XLA keeps the transposed tensor's strides
    # contiguous, so the cheaper view is safe there and reshape is used elsewhere.
    time_major = logits.transpose(0, 1)
    if device.type == "xla":
        return time_major.view(-1)
    return time_major.reshape(-1)


def train(model, loader, epochs=5):
    head = nn.Linear(192, 10)
    optimizer = torch.optim.AdamW([*model.parameters(), *head.parameters()], lr=1e-3)
    for epoch in range(epochs):
        model.train()
        for images, labels in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(head(model(images).mean(1)), labels)
            loss.backward()
            optimizer.step()
