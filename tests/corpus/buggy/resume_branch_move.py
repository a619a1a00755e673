"""A trainer that resumes from a checkpoint or starts fresh; on resume the optimizer's momentum
buffers are loaded on the CPU before the model moves to the GPU (the fresh branch is harmless: its
optimizer has no state yet)."""
import os

import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


def build(args, device):
    if args.resume and os.path.isfile(args.resume):
        checkpoint = torch.load(args.resume, map_location="cpu")
        model = Classifier(args.num_classes)
        model.load_state_dict(checkpoint["model"])
        optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
        optimizer.load_state_dict(checkpoint["optimizer"])
        start_epoch = checkpoint["epoch"] + 1
    else:
        model = Classifier(args.num_classes)
        optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
        start_epoch = 0
    model = model.to(device)  # expect: TL017
    return model, optimizer, start_epoch
