"""Mesh reconstruction trainer with a validation loss helper kept for other scripts."""

import torch
from torch import nn


class ChamferToPoints(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, vertices, points):
        distances = torch.cdist(points, vertices)
        return distances.min(dim=-1).values.mean() + distances.min(dim=-2).values.mean()


class MeshTrainer:
    def __init__(self, model, optimizer, weight=2.0):
        self.model = model
        self.optimizer = optimizer
        self.weight = weight
        self.chamfer = ChamferToPoints()

    def train_step(self, points):
        self.model.train()
        vertices = self.model(points)
        loss = self.surface_distance(vertices, points) * self.weight
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()

    @torch.no_grad()
    def eval_step(self, points):
        self.model.eval()
        return self.surface_distance(self.model(points), points).item()

    def validation_loss(self, vertices, points):
        """The distance alone, unweighted, on the tensors the caller passes."""
        return self.surface_distance(vertices, points)

    def surface_distance(self, vertices, points):
        return self.chamfer(vertices, points)
