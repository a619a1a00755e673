"""Transfer learning in stages: unfreeze more layers per stage, each stage with its own optimizer."""
import torch
import torch.nn as nn
from torchvision.models import resnet50


def set_trainable(model, prefixes):
    for name, p in model.named_parameters():
        p.requires_grad = any(name.startswith(prefix) for prefix in prefixes)


STAGES = [
    (("fc",), 1e-3, 3),
    (("fc", "layer4"), 3e-4, 5),
    (("fc", "layer4", "layer3"), 1e-4, 5),
]


def run(train_loader, val_loader, device="cuda"):
    model = resnet50(weights="IMAGENET1K_V2")
    model.fc = nn.Linear(model.fc.in_features, 37)
    model.to(device)
    criterion = nn.CrossEntropyLoss()
    for prefixes, lr, epochs in STAGES:
        set_trainable(model, prefixes)
        optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs * len(train_loader))
        for epoch in range(epochs):
            model.train()
            for images, labels in train_loader:
                images, labels = images.to(device), labels.to(device)
                for p in model.parameters():
                    p.grad = None
                loss = criterion(model(images), labels)
                if not torch.isfinite(loss):
                    continue
                loss.backward()
                optimizer.step()
                scheduler.step()
            model.train(False)
            with torch.inference_mode():
                correct = sum((model(x.to(device)).argmax(1).cpu() == y).sum().item() for x, y in val_loader)
            print(f"stage {prefixes[-1]} epoch {epoch}: acc {correct / len(val_loader.dataset):.4f}")
    return model
