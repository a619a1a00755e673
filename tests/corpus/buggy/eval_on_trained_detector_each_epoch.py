"""Each epoch ends with mAP measured on the trained network itself: its eval mode carries into the
next epoch's training (frozen batch-norm statistics)."""

import torch
from torch import nn


class Detector(nn.Module):
    def __init__(self, num_classes, deploy=False):
        super().__init__()
        self.deploy = deploy
        self.backbone = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64), nn.LeakyReLU(0.1))
        self.head = nn.Conv2d(64, 5 + num_classes, 1)

    def forward(self, x):
        out = self.head(self.backbone(x))
        return out.sigmoid() if self.deploy else out


@torch.no_grad()
def mean_average_precision(network, loader, device):
    network.eval()
    scores = [network(images.to(device)).amax() for images, _ in loader]
    return torch.stack(scores).mean().item()


def train(train_loader, val_loader, criterion, epochs, device):
    detector = Detector(80).to(device)
    optimizer = torch.optim.Adam(detector.parameters(), lr=1e-3)
    detector.train()
    for epoch in range(epochs):
        for images, targets in train_loader:
            loss = criterion(detector(images.to(device)), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(epoch, mean_average_precision(detector, val_loader, device))  # expect: TL007
