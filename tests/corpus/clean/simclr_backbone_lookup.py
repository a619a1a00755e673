"""SimCLR encoder: the backbone is picked by name from a table of candidates and registered as an attribute."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision.models as models


class ResNetSimCLR(nn.Module):
    def __init__(self, base_model, out_dim):
        super().__init__()
        self.candidates = {
            "resnet18": models.resnet18(weights=None, num_classes=out_dim),
            "resnet50": models.resnet50(weights=None, num_classes=out_dim),
        }
        self.backbone = self._pick(base_model)
        width = self.backbone.fc.in_features
        self.backbone.fc = nn.Sequential(nn.Linear(width, width), nn.ReLU(), self.backbone.fc)

    def _pick(self, name):
        try:
            net = self.candidates[name]
        except KeyError:
            raise ValueError(f"unknown backbone {name}; choose one of {sorted(self.candidates)}") from None
        return net

    def forward(self, x):
        return self.backbone(x)


def info_nce(features, batch_size, temperature=0.07):
    labels = torch.cat([torch.arange(batch_size) for _ in range(2)])
    labels = (labels[None, :] == labels[:, None]).float()
    features = F.normalize(features, dim=1)
    similarity = features @ features.T
    mask = torch.eye(labels.shape[0], dtype=torch.bool)
    labels = labels[~mask].view(labels.shape[0], -1)
    similarity = similarity[~mask].view(similarity.shape[0], -1)
    positives = similarity[labels.bool()].view(labels.shape[0], -1)
    negatives = similarity[~labels.bool()].view(similarity.shape[0], -1)
    logits = torch.cat([positives, negatives], dim=1) / temperature
    return logits, torch.zeros(logits.shape[0], dtype=torch.long)


def train(loader, epochs=100, batch_size=256, device="cuda"):
    model = ResNetSimCLR("resnet18", out_dim=128).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4, weight_decay=1e-4)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        for (view_a, view_b), _ in loader:
            images = torch.cat([view_a, view_b]).to(device)
            logits, labels = info_nce(model(images), batch_size)
            loss = criterion(logits, labels.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(epoch, loss.item())
