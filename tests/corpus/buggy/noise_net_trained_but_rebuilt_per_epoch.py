"""A "noise" network rebuilt every epoch that, unlike an augmenter, is trained with the classifier."""

import random

import torch
from torch import nn
from torch.nn import functional as F


class NoiseNet(nn.Module):
    def __init__(self, channels=3, hidden=16, strength=0.5):
        super().__init__()
        self.strength = strength
        self.mix = nn.Conv2d(channels, hidden, 3, padding=1)
        self.out = nn.Conv2d(hidden, channels, 3, padding=1)

    def rerandomise(self):
        for layer in (self.mix, self.out):
            nn.init.normal_(layer.weight, std=0.2)

    def set_strength(self, value):
        self.strength = value

    def forward(self, x):
        return x + self.strength * torch.tanh(self.out(F.gelu(self.mix(x))))


def train(model, optimizer, loader, device, augment=True):
    model.train()
    if augment:
        noise = NoiseNet().train().to(device)  # expect: TL003
        optimizer.add_param_group({"params": noise.parameters()})
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        if augment:
            half = images.shape[0] // 2
            noise.set_strength(random.uniform(0.25, 0.5))
            images = torch.cat([noise(images[:half]), images[half:]])
        loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main(model, loader, epochs=30):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(epochs):
        train(model, optimizer, loader, device)
        torch.save(model.state_dict(), f"epoch{epoch}.pt")
