"""ImageNet-style training with fp16 autocast, a GradScaler and gradient clipping."""
import time

import torch
import torch.nn as nn
import torchvision


def train_one_epoch(model, loader, criterion, optimizer, scaler, device, clip=1.0, log_every=50):
    model.train()
    start = time.time()
    for i, (images, target) in enumerate(loader):
        images = images.to(device, non_blocking=True)
        target = target.to(device, non_blocking=True)
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            output = model(images)
            loss = criterion(output, target)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        scaler.step(optimizer)
        scaler.update()
        if i % log_every == 0:
            print(f"[{i}/{len(loader)}] loss {loss.item():.4f} {(time.time() - start) / (i + 1):.3f}s/it")


def evaluate(model, loader, device):
    model.eval()
    correct = total = 0
    with torch.inference_mode():
        for images, target in loader:
            with torch.autocast(device_type="cuda", dtype=torch.float16):
                output = model(images.to(device))
            _, pred = output.topk(5, 1, True, True)
            pred = pred.t()
            correct_k = pred.eq(target.to(device).view(1, -1).expand_as(pred))
            correct += correct_k[:1].reshape(-1).float().sum().item()
            total += target.size(0)
    return 100.0 * correct / total


def main(train_loader, val_loader, epochs=90):
    device = torch.device("cuda")
    model = torchvision.models.resnet50().to(device)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    scaler = torch.amp.GradScaler("cuda")
    for epoch in range(epochs):
        train_one_epoch(model, train_loader, criterion, optimizer, scaler, device)
        scheduler.step()
        print(f"epoch {epoch}: top1 {evaluate(model, val_loader, device):.2f}")
