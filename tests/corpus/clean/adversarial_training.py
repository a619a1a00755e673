"""PGD adversarial training with an EMA copy of the model and a plateau scheduler."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F


def pgd_attack(model, x, y, eps=8 / 255, alpha=2 / 255, steps=7):
    """Runs under no_grad from the caller's point of view, but needs input gradients itself."""
    delta = torch.empty_like(x).uniform_(-eps, eps)
    for _ in range(steps):
        delta.requires_grad_(True)
        with torch.enable_grad():
            loss = F.cross_entropy(model(x + delta), y)
            grad, = torch.autograd.grad(loss, delta)
        delta = (delta.detach() + alpha * grad.sign()).clamp(-eps, eps)
        delta = (x + delta).clamp(0, 1) - x
    return delta.detach()


class EMA:
    def __init__(self, model, decay=0.999):
        self.module = copy.deepcopy(model).eval()
        self.decay = decay
        for p in self.module.parameters():
            p.requires_grad_(False)

    @torch.no_grad()
    def update(self, model):
        for e, m in zip(self.module.state_dict().values(), model.state_dict().values()):
            if e.dtype.is_floating_point:
                e.mul_(self.decay).add_(m.detach(), alpha=1 - self.decay)


@torch.no_grad()
def robust_accuracy(model, loader, device):
    model.eval()
    hits = total = 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        delta = pgd_attack(model, x, y)
        hits += (model(x + delta).argmax(1) == y).sum().item()
        total += y.numel()
    return hits / total


def train(model, train_loader, val_loader, epochs=100, device="cuda"):
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="max", factor=0.5, patience=5)
    ema = EMA(model)
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            model.eval()
            delta = pgd_attack(model, x, y)
            model.train()
            loss = F.cross_entropy(model(x + delta), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            ema.update(model)
        acc = robust_accuracy(ema.module, val_loader, device)
        scheduler.step(acc)
        print(f"epoch {epoch}: robust acc (EMA) {acc:.3f}")
