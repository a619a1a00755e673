"""Adversarial training where the attack runs on a frozen copy of the network: the helper
rebinds its parameter to the copy before switching it to eval, so the network being trained
never leaves train mode."""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F


class SmallResNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1)
        )
        self.head = nn.Linear(32, classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def fgsm(net, images, labels, eps):
    net = copy.deepcopy(net)
    net.eval()
    images = images.clone().requires_grad_(True)
    F.cross_entropy(net(images), labels).backward()
    return (images + eps * images.grad.sign()).detach()


def train(loader, val_loader, epochs=30, eps=8 / 255):
    model = SmallResNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(epochs):
        model.train()
        for step, (images, labels) in enumerate(loader):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            if step % 2 == 1:
                adversarial = fgsm(model, images, labels, eps)
                loss = loss + F.cross_entropy(model(adversarial), labels)
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            correct = sum((model(x).argmax(1) == y).sum().item() for x, y in val_loader)
        print(epoch, correct)
