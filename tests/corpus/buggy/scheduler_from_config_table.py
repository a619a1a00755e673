"""Segmentation training whose LR schedule is picked by name from a table of classes."""
import torch
import torch.nn.functional as F
from torch.optim.lr_scheduler import ExponentialLR, MultiStepLR, _LRScheduler


class PolyLR(_LRScheduler):
    """Polynomial decay; torch's own step() advances it."""

    def __init__(self, optimizer, max_iter, power=0.9, last_epoch=-1):
        self.max_iter = max_iter
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        factor = (1 - self.last_epoch / self.max_iter) ** self.power
        return [base * factor for base in self.base_lrs]


NAMED_SCHEDULES = {"poly": PolyLR, "multistep": MultiStepLR, "exp": ExponentialLR}


def schedule_from_config(optimizer, settings):
    settings = dict(settings)
    name = settings.pop("name")
    return NAMED_SCHEDULES[name](optimizer, **settings)


def train(net, loader, settings, iterations, device="cuda"):
    net = net.to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    schedule = schedule_from_config(optimizer, settings["schedule"])
    done = 0
    while done < iterations:
        for images, masks in loader:
            done += 1
            schedule.step()  # expect: TL015
            net.train()
            logits = net(images.to(device))
            loss = F.cross_entropy(logits, masks.to(device), ignore_index=255)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
