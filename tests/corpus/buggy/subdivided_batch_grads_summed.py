"""Large batches split into chunks that fit in memory; the summed gradients are never averaged."""

import torch
import torch.nn.functional as F
from torch import nn


def build_model(num_classes):
    return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, num_classes))


def train_epoch(model, loader, optimizer, device, subdivision, clip):
    model.train()
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        optimizer.zero_grad()
        for image_chunk, label_chunk in zip(images.chunk(subdivision), labels.chunk(subdivision)):
            loss = F.cross_entropy(model(image_chunk), label_chunk)
            loss.backward()  # expect: TL009
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()


def main(loader, epochs=10):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = build_model(100).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(epochs):
        train_epoch(model, loader, optimizer, device, subdivision=4, clip=5.0)
