"""A trainer with one epoch function for both phases; its validation path keeps the model in
training mode and records graphs."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(0.5), nn.Linear(64, classes))

    def forward(self, x):
        return self.classifier(self.features(x))


def run_epoch(model, loader, optimizer, mode, device):
    running_loss, correct, seen = 0.0, 0, 0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        outputs = model(images)  # expect: TL005, TL006
        loss = F.cross_entropy(outputs, labels)
        if mode == "train":
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        running_loss += loss.item() * images.size(0)
        correct += (outputs.argmax(1) == labels).sum().item()
        seen += images.size(0)
    return running_loss / seen, correct / seen


def main(train_loader, val_loader, epochs=30, device="cuda"):
    model = ConvNet().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    for epoch in range(epochs):
        model.train()
        train_loss, train_acc = run_epoch(model, train_loader, optimizer, "train", device)
        val_loss, val_acc = run_epoch(model, val_loader, None, "val", device)
        print(f"{epoch}: train {train_loss:.3f}/{train_acc:.3f} val {val_loss:.3f}/{val_acc:.3f}")
