"""Validation inline in the epoch loop switches to eval; the next epoch trains in eval mode."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, 16, 3), nn.BatchNorm2d(16), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.drop = nn.Dropout(0.5)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        return self.fc(self.drop(self.conv(x).flatten(1)))


def main(train_loader, val_loader, epochs=10):
    model = ConvNet()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    model.train()
    for epoch in range(epochs):
        losses = []
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss)  # expect: TL010
        print(f"epoch {epoch}: train loss {torch.stack(losses).mean().item():.4f}")
        model.eval()  # expect: TL007
        with torch.no_grad():
            acc = sum((model(x).argmax(1) == y).float().mean().item() for x, y in val_loader) / len(val_loader)
        print(f"epoch {epoch}: val acc {acc:.4f}")
