"""The validation helper called every epoch runs in train mode with autograd on."""
import torch
import torch.nn as nn
from torchvision.models import resnet18


def validate(model, loader, criterion, device):
    total, correct, loss_sum = 0, 0, 0.0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        out = model(images)  # expect: TL005, TL006
        loss_sum += criterion(out, labels).item() * labels.size(0)
        correct += (out.argmax(1) == labels).sum().item()
        total += labels.size(0)
    return loss_sum / total, correct / total


def train(train_loader, val_loader, epochs=30, device="cuda"):
    model = resnet18(num_classes=10).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        model.train()
        for images, labels in train_loader:
            images, labels = images.to(device), labels.to(device)
            optimizer.zero_grad()
            criterion(model(images), labels).backward()
            optimizer.step()
        val_loss, val_acc = validate(model, val_loader, criterion, device)
        print(f"epoch {epoch}: val loss {val_loss:.3f} acc {val_acc:.3f}")
