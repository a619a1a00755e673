"""Segmentation training whose LR schedule is picked by name from a table of classes, stepped
after the optimizer; one entry has its own step() (a warm-up meant to step first)."""
import torch
import torch.nn.functional as F
from torch.optim.lr_scheduler import CosineAnnealingLR, MultiStepLR, _LRScheduler


class WarmupThenFlat(_LRScheduler):
    def __init__(self, optimizer, warmup, last_epoch=-1):
        self.warmup = warmup
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        scale = min(1.0, (self.last_epoch + 1) / self.warmup)
        return [base * scale for base in self.base_lrs]

    def step(self, epoch=None):
        # sets the rate of the coming iteration: meant to run before it
        super().step(epoch)


NAMED_SCHEDULES = {"cosine": CosineAnnealingLR, "multistep": MultiStepLR}
WARMUPS = {"flat": WarmupThenFlat, "cosine": CosineAnnealingLR}


def train(net, loader, settings, iterations, device="cuda"):
    net = net.to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    schedule = NAMED_SCHEDULES[settings["name"]](optimizer, **settings["args"])
    warmup = WARMUPS[settings["warmup"]](optimizer, settings["warmup_iters"])
    done = 0
    while done < iterations:
        for images, masks in loader:
            done += 1
            warmup.step()
            net.train()
            logits = net(images.to(device))
            loss = F.cross_entropy(logits, masks.to(device), ignore_index=255)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
