"""Training script that logs its fresh optimizer and hands it to a schedule factory before the move."""

import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)
SCHEDULES = {}


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x):
        return self.body(x)


def learning_rates(opt):
    return [group["lr"] for group in opt.param_groups]


def make_schedule(name, **options):
    return SCHEDULES[name](**options)


def main(loader, schedule_name, device="cuda"):
    model = Regressor()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    logger.debug("optimizer type: %s, defaults: %s", type(optimizer), optimizer.defaults)
    logger.info("learning rates: %s", learning_rates(optimizer))
    schedule = make_schedule(schedule_name, optimizer=optimizer)
    # Parameters may have been added by the schedule: move the model once more.
    model.to(device)
    model.train()
    for features, target in loader:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(features.to(device)), target.to(device))
        loss.backward()
        optimizer.step()
        schedule.step()
