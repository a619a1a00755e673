"""A solver whose one epoch function trains under `if train:`; the validation under no_grad forgets
`train=False`, so it takes the default and runs the backward with autograd off."""

import torch

class Solver:
    def __init__(self, model, optimizer, loader):
        self.model, self.optimizer, self.loader = model, optimizer, loader

    def _run_one_epoch(self, epoch, train=True):
        total = 0.0
        for x, y in self.loader:
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            if train:
                loss.backward()  # expect: TL016
                self.optimizer.step()
                self.optimizer.zero_grad()
            total += loss.item()
        return total

    def train(self, epochs):
        for epoch in range(epochs):
            self.model.train()
            self._run_one_epoch(epoch)
            self.model.eval()
            with torch.no_grad():
                valid = self._run_one_epoch(epoch)
        return valid
