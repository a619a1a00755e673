"""Multi-stage fine-tuning: each stage has its own milestone schedule, stepped at the top of the batch."""

import torch
from torch import nn


def stage_schedules(optimizer, stage_milestones):
    schedules = []
    for milestones in stage_milestones:
        schedules.append(torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones, gamma=0.1))
    return schedules


def finetune(model: nn.Module, stage_loaders, stage_milestones, device="cpu"):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    schedules = stage_schedules(optimizer, stage_milestones)
    model.train()
    for stage, loader in enumerate(stage_loaders):
        for images, labels in loader:
            schedules[stage].step()  # expect: TL015
            images, labels = images.to(device), labels.to(device)
            loss = nn.functional.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return model
