"""Unsupervised re-identification with a fixed number of clusters: the head keeps its shape and
only its weights are overwritten each epoch, so rebuilding the optimizer throws away Adam's moments."""

import torch
from torch import nn


def cluster_features(loader, model, k):
    model.eval()
    with torch.no_grad():
        feats = torch.cat([model.module.backbone(x) for x, _ in loader])
    return kmeans(feats, k)


def reset_head(loader, model, k):
    labels, centers = cluster_features(loader, model, k)
    model.module.head.weight.data.copy_(centers)
    return pseudo_labelled(loader, labels)


def train(model, loader, args):
    for epoch in range(args.epochs):
        pseudo_loader = reset_head(loader, model, args.num_clusters)
        criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
        optimizer = torch.optim.Adam(model.module.parameters(), lr=args.lr, weight_decay=5e-4)  # expect: TL004
        model.train()
        for images, targets in pseudo_loader:
            optimizer.zero_grad()
            loss = criterion(model(images), targets)
            loss.backward()
            optimizer.step()
