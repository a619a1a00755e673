"""Super-resolution trainer whose LR schedule class is picked from an option; the warm restart is the project's own."""
import torch
import torch.nn.functional as F
import torch.optim as optim
import torch.optim.lr_scheduler as lr_sched


class WarmRestarts(lr_sched._LRScheduler):
    """Sets the coming epoch's rate itself: stepped at the start of each epoch by design."""

    def __init__(self, optimizer, period, last_epoch=-1):
        self.period = period
        super().__init__(optimizer, last_epoch)

    def step(self, epoch=None):
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        phase = self.last_epoch % self.period
        for group, base in zip(self.optimizer.param_groups, self.base_lrs):
            group["lr"] = base * (1 - phase / self.period)


def pick_optimizer(opts, net):
    if opts.optimizer == "adam":
        optimizer_class = optim.Adam
        settings = {"betas": (0.9, 0.999), "eps": 1e-8}
    else:
        optimizer_class = optim.SGD
        settings = {"momentum": 0.9}
    return optimizer_class(net.parameters(), lr=opts.lr, **settings)


def pick_schedule(opts, optimizer):
    if opts.decay == "step":
        schedule_class = lr_sched.StepLR
        settings = {"step_size": opts.decay_every, "gamma": 0.5}
    else:
        schedule_class = WarmRestarts
        settings = {"period": opts.restart_every}
    return schedule_class(optimizer, **settings)


class Trainer:
    def __init__(self, opts, net, train_loader):
        self.opts = opts
        self.net = net
        self.train_loader = train_loader
        self.optimizer = pick_optimizer(opts, net)
        self.schedule = pick_schedule(opts, self.optimizer)

    def train_epoch(self):
        self.schedule.step()
        self.net.train()
        for low, high in self.train_loader:
            low, high = low.cuda(), high.cuda()
            self.optimizer.zero_grad()
            loss = F.l1_loss(self.net(low), high)
            loss.backward()
            self.optimizer.step()
        return self.schedule.get_last_lr()[0]
