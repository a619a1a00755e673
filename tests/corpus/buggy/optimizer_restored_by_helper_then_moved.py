"""Fine-tuning script: the optimizer state is restored by a helper, then the model is moved."""

import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x):
        return self.body(x)


def resume_optimizer(opt, path):
    state = torch.load(path, map_location="cpu")
    opt.load_state_dict(state["optimizer"])
    logger.info("resumed optimizer from %s", path)


def main(resume_path, loader, device="cuda"):
    model = Regressor()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    logger.debug("optimizer type: %s", type(optimizer))
    resume_optimizer(optimizer, resume_path)
    model.to(device)  # expect: TL017
    model.train()
    for features, target in loader:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(features.to(device)), target.to(device))
        loss.backward()
        optimizer.step()
