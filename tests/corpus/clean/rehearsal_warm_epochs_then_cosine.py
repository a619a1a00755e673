"""Rehearsal fine-tuning on a replay buffer: two hand-set warm epochs, then a cosine schedule that
advances at the top of each later epoch (after the optimizer stepped through the earlier ones)."""

import torch
import torch.nn.functional as F


def fit_on_buffer(net, buffer, epochs, max_lr=0.05, min_lr=5e-4, batch_size=32):
    opt = torch.optim.SGD(net.parameters(), lr=max_lr, momentum=0.9, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=1, T_mult=2, eta_min=min_lr)
    for epoch in range(epochs):
        if epoch <= 0:
            for group in opt.param_groups:
                group["lr"] = max_lr * 0.1
        elif epoch == 1:
            for group in opt.param_groups:
                group["lr"] = max_lr
        else:
            sched.step()
        inputs, labels = buffer.sample_all()
        while len(inputs):
            xb, yb = inputs[:batch_size], labels[:batch_size]
            inputs, labels = inputs[batch_size:], labels[batch_size:]
            opt.zero_grad()
            loss = F.cross_entropy(net(xb), yb)
            loss.backward()
            opt.step()
    return net


class OnlineLearner:
    """Called once per incoming batch by the continual-learning driver, with the epoch number."""

    def __init__(self, net, lr=0.03, virtual_batches=4):
        self.net = net
        self.opt = torch.optim.AdamW(net.parameters(), lr=lr)
        self.sched = torch.optim.lr_scheduler.ExponentialLR(self.opt, gamma=0.95)
        self.virtual_batches = virtual_batches
        self.last_epoch = None
        self.it = 0

    def observe(self, x, y, epoch):
        if self.last_epoch != epoch:
            if epoch > 0:
                self.sched.step()
            self.last_epoch = epoch
        loss = F.cross_entropy(self.net(x), y) / self.virtual_batches
        loss.backward()
        if self.drift_penalty_on and self.it > 0 and self.it % self.virtual_batches == 0:
            penalty = 0.1 * self.drift()
            penalty.backward()
        if self.it > 0 and self.it % self.virtual_batches == 0:
            self.opt.step()
            self.opt.zero_grad()
        self.it += 1
        return loss.item()

    def drift(self):
        return sum(p.pow(2).sum() for p in self.net.parameters())

    drift_penalty_on = True
