"""Mesh reconstruction trainer whose validation loss runs a learned refinement head."""

import torch
from torch import nn


class ChamferToPoints(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, vertices, points):
        distances = torch.cdist(points, vertices)
        return distances.min(dim=-1).values.mean() + distances.min(dim=-2).values.mean()


class MeshTrainer:
    def __init__(self, model, optimizer, refine_width=3):
        self.model = model
        self.optimizer = optimizer
        self.chamfer = ChamferToPoints()
        self.refiner = nn.Sequential(nn.Linear(refine_width, 64), nn.ReLU(), nn.Linear(64, refine_width))

    def train_step(self, points):
        self.model.train()
        vertices = self.model(points)
        loss = self.chamfer(vertices, points)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()

    @torch.no_grad()
    def eval_step(self, points):
        self.model.eval()
        return self.chamfer(self.model(points), points).item()

    def validation_loss(self, vertices, points):
        return self.refined_distance(vertices, points).item()  # expect: TL006

    def refined_distance(self, vertices, points):
        return self.chamfer(vertices + self.refiner(vertices), points)
