"""A keypoint trainer whose per-batch step method keeps a running loss tensor on the object."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class HeatmapNet(nn.Module):
    def __init__(self, n_joints=17):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3), nn.BatchNorm2d(64), nn.ReLU())
        self.body = nn.Sequential(nn.Conv2d(64, 128, 3, 1, 1), nn.BatchNorm2d(128), nn.ReLU())
        self.head = nn.Conv2d(128, n_joints, 1)

    def forward(self, x):
        return self.head(self.body(self.stem(x)))


class PoseTrainer:
    def __init__(self, model, lr=1e-3, device="cuda"):
        self.device = device
        self.model = model.to(device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.running_loss = 0.0
        self.seen = 0

    def train_step(self, images, heatmaps, weights):
        images, heatmaps, weights = images.to(self.device), heatmaps.to(self.device), weights.to(self.device)
        pred = self.model(images)
        loss = (F.mse_loss(pred, heatmaps, reduction="none").mean((2, 3)) * weights).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.running_loss += loss  # expect: TL010
        self.seen += 1

    def train_epoch(self, loader, epoch):
        self.model.train()
        self.running_loss, self.seen = 0.0, 0
        for images, heatmaps, weights in loader:
            self.train_step(images, heatmaps, weights)
        print(f"epoch {epoch}: loss {float(self.running_loss) / max(self.seen, 1):.5f}")
