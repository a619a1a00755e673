"""A fine-tuning loop wrapped in no_grad "to save memory". (The models moved after their optimizers
are fine: those optimizers have no state yet, and `.cuda()`/`.half()` keep the Parameter objects.)"""
import torch
import torch.nn as nn
from torchvision.models import efficientnet_b0


def finetune(loader, epochs=3, device="cuda"):
    model = efficientnet_b0(weights="DEFAULT")
    model.classifier[1] = nn.Linear(model.classifier[1].in_features, 5)
    optimizer = torch.optim.AdamW(model.classifier.parameters(), lr=1e-3)
    model.cuda()
    criterion = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        model.train()
        with torch.set_grad_enabled(False):
            for images, labels in loader:
                images, labels = images.to(device), labels.to(device)
                optimizer.zero_grad()
                loss = criterion(model(images), labels)
                loss.backward()  # expect: TL016
                optimizer.step()
    return model


def train_head(backbone, head, loader, device="cuda"):
    optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
    head.half()
    for feats, labels in loader:
        with torch.no_grad():
            feats = backbone(feats.to(device)).half()
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(head(feats).float(), labels.to(device))
        loss.backward()
        optimizer.step()
