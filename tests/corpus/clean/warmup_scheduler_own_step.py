"""A detection trainer with a gradual warm-up written as a torch scheduler subclass that replaces
``step()``: it is stepped at the start of each epoch (epoch 0 has rate 0), then hands over to a
cosine schedule. Its contract is its own, not torch's."""
import torch
from torch.optim.lr_scheduler import CosineAnnealingLR, _LRScheduler


class GradualWarmup(_LRScheduler):
    def __init__(self, optimizer, warmup_epochs, after_scheduler):
        self.warmup_epochs = warmup_epochs
        self.after_scheduler = after_scheduler
        self.finished = False
        super().__init__(optimizer)

    def get_lr(self):
        if self.last_epoch > self.warmup_epochs:
            return self.after_scheduler.get_last_lr()
        return [base * self.last_epoch / self.warmup_epochs for base in self.base_lrs]

    def step(self, epoch=None):
        # Called at the beginning of an epoch: the rate of the coming epoch is written now.
        if self.finished:
            self.after_scheduler.step()
            return
        self.finished = self.last_epoch >= self.warmup_epochs
        super().step(epoch)


def train(detector, train_loader, epochs, device):
    optimizer = torch.optim.SGD(detector.parameters(), lr=0.01, momentum=0.9, weight_decay=3e-5)
    cosine = CosineAnnealingLR(optimizer, T_max=epochs)
    warmup = GradualWarmup(optimizer, warmup_epochs=10, after_scheduler=cosine)
    for epoch in range(epochs):
        warmup.step()
        detector.train()
        for images, targets in train_loader:
            images = images.to(device)
            losses = detector(images, targets)
            loss = losses["classification"] + losses["box_regression"]
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: lr {optimizer.param_groups[0]['lr']:.5f} loss {loss.item():.4f}")
