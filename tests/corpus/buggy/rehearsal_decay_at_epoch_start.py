"""Rehearsal fine-tuning whose step decay fires at the top of the epoch, epoch 0 included, and whose
drift penalty runs on every micro-batch after the first, undivided."""

import torch
import torch.nn.functional as F


def fit_on_buffer(net, buffer, epochs, decay_every=5, batch_size=32):
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    for epoch in range(epochs):
        if epoch % decay_every == 0:
            sched.step()  # expect: TL015
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
    def __init__(self, net, lr=0.03, virtual_batches=4):
        self.net = net
        self.opt = torch.optim.AdamW(net.parameters(), lr=lr)
        self.virtual_batches = virtual_batches
        self.it = 0

    def observe(self, x, y):
        loss = F.cross_entropy(self.net(x), y) / self.virtual_batches
        loss.backward()
        if self.drift_penalty_on and self.it > 0:
            penalty = 0.1 * self.drift()
            penalty.backward()  # expect: TL009
        if self.it > 0 and self.it % self.virtual_batches == 0:
            self.opt.step()
            self.opt.zero_grad()
        self.it += 1
        return loss.item()

    def drift(self):
        return sum(p.pow(2).sum() for p in self.net.parameters())

    drift_penalty_on = True
