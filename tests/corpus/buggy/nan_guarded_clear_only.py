"""An iteration-based trainer that skips only the clear on a non-finite loss: the backward still runs."""
import time

import torch


class SkipNanTrainer:
    def __init__(self, model, loader, optimizer, max_iter):
        self.model = model
        self.optimizer = optimizer
        self.max_iter = max_iter
        self._batches = iter(loader)
        self.history = []

    def train(self):
        self.model.train()
        for self.iter in range(self.max_iter):
            self.run_step()

    def run_step(self):
        start = time.perf_counter()
        batch = next(self._batches)
        losses = self.model(batch)
        total = sum(losses.values())
        if torch.isfinite(total):
            self.optimizer.zero_grad()
        else:
            print(f"iter {self.iter}: non-finite loss")
        total.backward()
        self.history.append({k: v.item() for k, v in losses.items()} | {"time": time.perf_counter() - start})
        self.optimizer.step()  # expect: TL001
