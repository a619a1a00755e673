"""Linear evaluation of a self-supervised backbone: the backbone stays in eval mode during the
probe's training on purpose (its batch-norm statistics are frozen), so the evaluation after each
epoch leaves nothing to restore."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision.models import resnet50


def train(backbone, classifier, loader, optimizer, device):
    backbone.eval()
    classifier.train()
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        with torch.no_grad():
            feats = backbone(images).flatten(1)
        loss = F.cross_entropy(classifier(feats), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def validate(backbone, classifier, loader, device):
    backbone.eval()
    classifier.eval()
    correct = total = 0
    with torch.no_grad():
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            correct += (classifier(backbone(images).flatten(1)).argmax(1) == labels).sum().item()
            total += labels.numel()
    return correct / total


def linear_eval(checkpoint, train_loader, val_loader, epochs=100, device="cuda"):
    backbone = resnet50()
    backbone.fc = nn.Identity()
    backbone.load_state_dict(torch.load(checkpoint, map_location="cpu"), strict=False)
    backbone.requires_grad_(False)
    backbone.to(device)
    classifier = nn.Linear(2048, 1000).to(device)
    optimizer = torch.optim.SGD(classifier.parameters(), lr=0.1, momentum=0.9, weight_decay=0.0)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, epochs)
    best = 0.0
    for epoch in range(epochs):
        train(backbone, classifier, train_loader, optimizer, device)
        best = max(best, validate(backbone, classifier, val_loader, device))
        scheduler.step()
    return best
