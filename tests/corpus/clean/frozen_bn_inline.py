"""Segmentation fine-tuning with batch norm frozen inline at the start of every epoch."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision.models.segmentation import deeplabv3_resnet50


def poly_lr(optimizer, base_lr, it, max_it, power=0.9):
    lr = base_lr * (1 - it / max_it) ** power
    for group in optimizer.param_groups:
        group["lr"] = lr
    return lr


def finetune(loader, n_classes=21, epochs=30, base_lr=0.01, device="cuda"):
    model = deeplabv3_resnet50(weights="DEFAULT")
    model.classifier[4] = nn.Conv2d(256, n_classes, 1)
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=base_lr, momentum=0.9, weight_decay=1e-4)
    max_it, it = epochs * len(loader), 0
    for epoch in range(epochs):
        model.train()
        # Batches of 2 crops per GPU are too small for batch statistics: keep the pretrained ones.
        for m in model.backbone.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.eval()
        for images, masks in loader:
            images, masks = images.to(device), masks.to(device)
            out = model(images)["out"]
            loss = F.cross_entropy(out, masks, ignore_index=255)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            poly_lr(optimizer, base_lr, it, max_it)
            it += 1
        print(f"epoch {epoch}: loss {loss.item():.4f}")
    return model
