"""A critic whose blocks pick their norm layer from constructor arguments: the selected branch builds a batch norm, evaluated in training mode."""

import torch
import torch.nn as nn


def make_norm(kind, channels):
    if kind == "group":
        return nn.GroupNorm(8, channels)
    if kind == "layer":
        return nn.GroupNorm(1, channels)
    return nn.BatchNorm2d(channels)


class Block(nn.Module):
    def __init__(self, cin, cout, resample=None, norm="group"):
        super().__init__()
        if resample == "down":
            self.norm = make_norm(norm, cin)
            self.conv = nn.Conv2d(cin, cout, 3, stride=2, padding=1)
        elif resample == "up":
            self.norm = nn.BatchNorm2d(cin)
            self.conv = nn.ConvTranspose2d(cin, cout, 4, stride=2, padding=1)
        else:
            raise ValueError(resample)

    def forward(self, x):
        return self.conv(torch.relu(self.norm(x)))


class Stage(nn.Module):
    def __init__(self, cin, cout, resample):
        super().__init__()
        self.first = Block(cin, cout, resample=resample, norm="group")
        self.second = Block(cout, cout, resample)

    def forward(self, x):
        return self.second(self.first(x))


class Critic(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1)
        self.body = Stage(width, 2 * width, "up")
        self.head = nn.Linear(2 * width, 1)

    def forward(self, x):
        return self.head(self.body(self.stem(x)).mean((2, 3)))


critic = Critic(32)
opt = torch.optim.Adam(critic.parameters(), lr=1e-4)
for images, labels in train_batches:
    opt.zero_grad()
    nn.functional.binary_cross_entropy_with_logits(critic(images).squeeze(1), labels).backward()
    opt.step()

hits = 0
with torch.no_grad():
    for images, labels in dev_batches:
        hits += ((critic(images).squeeze(1) > 0) == labels).sum().item()  # expect: TL005
print(hits)
