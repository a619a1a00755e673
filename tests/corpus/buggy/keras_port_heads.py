"""A model ported from Keras: forward returns probabilities, trained with logit losses."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ChurnNet(nn.Module):
    def __init__(self, n_features, hidden=64):
        super().__init__()
        self.fc1 = nn.Linear(n_features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return torch.sigmoid(self.out(x))


class SegmentNet(nn.Module):
    def __init__(self, n_features, n_segments=6):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_features, 128), nn.ReLU())
        self.cls = nn.Linear(128, n_segments)

    def forward(self, x):
        return F.softmax(self.cls(self.body(x)), dim=1)


def fit(loader, n_features, epochs=30):
    churn, segment = ChurnNet(n_features), SegmentNet(n_features)
    optimizer = torch.optim.Adam(list(churn.parameters()) + list(segment.parameters()), lr=1e-3)
    bce = nn.BCEWithLogitsLoss()
    ce = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        churn.train()
        segment.train()
        for x, churned, seg in loader:
            optimizer.zero_grad()
            loss = bce(churn(x).squeeze(1), churned.float())  # expect: TL020
            loss = loss + ce(segment(x), seg)  # expect: TL012
            loss.backward()
            optimizer.step()
