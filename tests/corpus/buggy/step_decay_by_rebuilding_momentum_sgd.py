"""Step decay written by hand by rebuilding SGD each epoch, but with momentum: the momentum buffers
start from zero every epoch, and the warm-up scheduler is attached to an optimizer that is thrown
away."""
import torch
import torch.nn.functional as F


def train(model, loader, epochs=30, base_lr=0.1, device="cpu"):
    model.to(device)
    for epoch in range(epochs):
        lr = base_lr * (0.1 ** (epoch // 10))
        optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4)  # expect: TL004
        model.train()
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            optimizer.zero_grad()
            F.cross_entropy(model(images), labels).backward()
            optimizer.step()
    return model


def finetune(model, loader, epochs=5, lr=0.01):
    for epoch in range(epochs):
        optimizer = torch.optim.SGD(model.parameters(), lr=lr)  # expect: TL004
        warmup = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=100)
        for images, labels in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(images), labels).backward()
            optimizer.step()
            warmup.step()
    return model
