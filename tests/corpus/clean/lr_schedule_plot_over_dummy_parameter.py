"""Plots a warm-up + step-decay learning-rate schedule by driving an optimizer over a placeholder tensor."""

import matplotlib.pyplot as plt
import torch


class WarmupStepDecay:
    def __init__(self, optimizer, warmup, milestones, gamma=0.1):
        self.optimizer = optimizer
        self.warmup = warmup
        self.milestones = milestones
        self.gamma = gamma
        self.base = [group["lr"] for group in optimizer.param_groups]
        self.count = 0

    def step(self):
        self.count += 1
        scale = min(1.0, self.count / self.warmup)
        scale *= self.gamma ** sum(self.count >= m for m in self.milestones)
        for group, base in zip(self.optimizer.param_groups, self.base):
            group["lr"] = base * scale


placeholder = torch.nn.Parameter(torch.zeros(0))
optimizer = torch.optim.SGD([placeholder], lr=0.4, momentum=0.9)
schedule = WarmupStepDecay(optimizer, warmup=500, milestones=(3000, 6000))
rates = []
for it in range(9000):
    placeholder.sum().backward()
    optimizer.step()
    rates.append(optimizer.param_groups[0]["lr"])
    schedule.step()

plt.plot(range(len(rates)), rates)
plt.xlabel("iteration")
plt.ylabel("learning rate")
plt.savefig("schedule.png")
