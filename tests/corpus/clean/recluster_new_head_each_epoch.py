"""Unsupervised re-identification: every epoch re-clusters the target features and gives the
model a new classifier head sized for the new number of clusters, then builds the optimizer
over the grown model."""

import torch
from torch import nn


def cluster_features(loader, model, eps):
    model.eval()
    with torch.no_grad():
        feats = torch.cat([model.module.backbone(x) for x, _ in loader])
    labels, centers = density_cluster(feats, eps)
    return labels, centers


def reassign_head(loader, model, eps):
    labels, centers = cluster_features(loader, model, eps)
    num_clusters = centers.shape[0]
    model.module.head = nn.Linear(model.module.feature_dim, num_clusters, bias=False).to(centers.device)
    model.module.head.weight.data.copy_(centers)
    return pseudo_labelled(loader, labels), num_clusters


def train(model, loader, args):
    for epoch in range(args.epochs):
        pseudo_loader, num_clusters = reassign_head(loader, model, args.eps)
        criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
        optimizer = torch.optim.Adam(model.module.parameters(), lr=args.lr, weight_decay=5e-4)
        model.train()
        for images, targets in pseudo_loader:
            optimizer.zero_grad()
            loss = criterion(model(images), targets)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: {num_clusters} clusters, last loss {loss.item():.3f}")
