"""A module that keeps imported helpers in plain lists (transforms, meters, losses): none of
them has weights, so nothing is lost; its imported layers sit in an nn.ModuleList."""
import torch
import torch.nn as nn
from torchvision.transforms import Normalize, RandomResizedCrop

from .losses import FocalLoss, LabelSmoothingLoss
from .models.layers import Mlp
from .utils.meters import AverageMeter


class MultiHeadClassifier(nn.Module):
    def __init__(self, backbone, dim, classes_per_head):
        super().__init__()
        self.backbone = backbone
        self.gpu_augment = [RandomResizedCrop(224), Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))]
        self.heads = nn.ModuleList([Mlp(dim, dim, n) for n in classes_per_head])
        self.criteria = [FocalLoss(gamma=2.0), LabelSmoothingLoss(0.1)]
        self.meters = [AverageMeter() for _ in classes_per_head]

    def forward(self, images):
        if self.training:
            for transform in self.gpu_augment:
                images = transform(images)
        feats = self.backbone(images)
        return [head(feats) for head in self.heads]

    def loss(self, outputs, targets):
        total = 0.0
        for out, target, criterion, meter in zip(outputs, targets, self.criteria, self.meters):
            value = criterion(out, target)
            meter.update(value.item())
            total = total + value
        return total


def fit(model, loader, epochs=20):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(epochs):
        model.train()
        for images, targets in loader:
            optimizer.zero_grad()
            model.loss(model(images), targets).backward()
            optimizer.step()
