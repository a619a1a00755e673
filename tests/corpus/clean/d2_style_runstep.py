"""A detectron2-style trainer: hooks around a run_step that does one iteration."""
import time
import weakref

import torch


class HookBase:
    trainer = None

    def before_step(self):
        pass

    def after_step(self):
        pass


class SimpleTrainer:
    def __init__(self, model, data_loader, optimizer, grad_clip=None):
        model.train()
        self.model = model
        self.data_loader = data_loader
        self._data_iter = iter(data_loader)
        self.optimizer = optimizer
        self.grad_clip = grad_clip
        self._hooks = []
        self.iter = 0

    def register_hooks(self, hooks):
        for h in hooks:
            h.trainer = weakref.proxy(self)
            self._hooks.append(h)

    def run_step(self):
        assert self.model.training, "model was switched to eval mode!"
        start = time.perf_counter()
        data = next(self._data_iter)
        data_time = time.perf_counter() - start

        loss_dict = self.model(data)
        losses = sum(loss_dict.values())

        self.optimizer.zero_grad()
        losses.backward()
        if self.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip)
        self.optimizer.step()
        self._write_metrics({k: v.detach().cpu().item() for k, v in loss_dict.items()}, data_time)

    def _write_metrics(self, metrics, data_time):
        if self.iter % 20 == 0:
            print(f"iter {self.iter}: {metrics} data_time {data_time:.3f}")

    def train(self, start_iter, max_iter):
        self.iter = start_iter
        for self.iter in range(start_iter, max_iter):
            for h in self._hooks:
                h.before_step()
            self.run_step()
            for h in self._hooks:
                h.after_step()
