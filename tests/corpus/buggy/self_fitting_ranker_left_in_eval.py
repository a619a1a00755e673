"""A click-through ranker that trains itself; its validation goes through predict(), which
switches the model to eval mode and leaves it there for the following epochs."""

import torch
from torch import nn


class ClickRanker(nn.Module):
    def __init__(self, n_features, hidden=128, dropout=0.2):
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Linear(n_features, hidden),
            nn.BatchNorm1d(hidden),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, 1),
        )
        self.optimizer = torch.optim.Adam(self.parameters(), lr=1e-3)

    def forward(self, features):
        return self.mlp(features).squeeze(-1)

    def fit(self, loader, val_features, val_labels, epochs=10):
        model = self.train()
        history = []
        for epoch in range(epochs):
            for features, clicks in loader:
                self.optimizer.zero_grad()
                loss = nn.functional.binary_cross_entropy_with_logits(model(features), clicks)
                loss.backward()
                self.optimizer.step()
            history.append(self.validate(val_features, val_labels))  # expect: TL007
        return history

    def validate(self, features, labels):
        scores = self.predict(features)
        return ((scores > 0.5).float() == labels).float().mean().item()

    def predict(self, features, batch_size=1024):
        model = self.eval()
        outputs = []
        with torch.no_grad():
            for start in range(0, len(features), batch_size):
                outputs.append(torch.sigmoid(model(features[start : start + batch_size])))
        return torch.cat(outputs)
