"""Mean-teacher style training: a weight-EMA helper class of the file has a `step()` method too,
but it is no optimizer (it owns no gradients), so it needs no zero_grad of its own."""
import copy

import torch
import torch.nn.functional as F


class WeightEMA(object):
    def __init__(self, model, ema_model, alpha=0.999):
        self.model = model
        self.ema_model = ema_model
        self.alpha = alpha

    @torch.no_grad()
    def step(self):
        for param, ema_param in zip(self.model.parameters(), self.ema_model.parameters()):
            ema_param.mul_(self.alpha).add_(param, alpha=1 - self.alpha)


def train(model, loader, epochs=10):
    ema_model = copy.deepcopy(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.03, momentum=0.9)
    ema_optimizer = WeightEMA(model, ema_model)
    model.train()
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            ema_optimizer.step()
    return ema_model
