"""A configurable CNN: activation and norm *classes* kept in plain lists and dicts (no instances)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "silu": nn.SiLU}


class ConfigurableCNN(nn.Module):
    def __init__(self, widths=(32, 64, 128), act="silu", norms=(nn.BatchNorm2d, nn.GroupNorm), n_classes=10):
        super().__init__()
        self.widths = list(widths)
        self.act_cls = ACTIVATIONS[act]
        self.norm_choices = [nn.BatchNorm2d, nn.InstanceNorm2d]
        self.kernel_sizes = [3] * len(widths)
        stages, c_in = [], 3
        for w, k in zip(widths, self.kernel_sizes):
            stages.append(nn.Sequential(nn.Conv2d(c_in, w, k, padding=k // 2), nn.BatchNorm2d(w), self.act_cls()))
            c_in = w
        self.stages = nn.Sequential(*stages)
        self.head = nn.Linear(c_in, n_classes)
        self.register_buffer("class_weights", torch.ones(n_classes))

    def forward(self, x):
        for stage in self.stages:
            x = F.max_pool2d(stage(x), 2)
        return self.head(x.mean((2, 3)))


def train(model, loader, epochs=10):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(epochs):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y, weight=model.class_weights)
            loss.backward()
            optimizer.step()
