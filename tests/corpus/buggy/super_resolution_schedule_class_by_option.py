"""Super-resolution trainer whose optimizer and LR schedule classes are picked from an option."""
import torch
import torch.nn.functional as F
import torch.optim as optim
import torch.optim.lr_scheduler as lr_sched


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
        schedule_class = lr_sched.MultiStepLR
        settings = {"milestones": [int(m) for m in opts.decay.split("-")[1:]], "gamma": 0.5}
    return schedule_class(optimizer, **settings)


class Trainer:
    def __init__(self, opts, net, train_loader):
        self.opts = opts
        self.net = net
        self.train_loader = train_loader
        self.optimizer = pick_optimizer(opts, net)
        self.schedule = pick_schedule(opts, self.optimizer)

    def train_epoch(self):
        self.schedule.step()  # expect: TL015
        self.net.train()
        for low, high in self.train_loader:
            low, high = low.cuda(), high.cuda()
            self.optimizer.zero_grad()
            loss = F.l1_loss(self.net(low), high)
            loss.backward()
            self.optimizer.step()
        return self.schedule.get_last_lr()[0]
