"""Grid search over learning rate and weight decay; each trial trains from scratch."""
import itertools
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc = nn.Linear(64 * 7 * 7, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


def train_one_epoch(model, loader, optimizer):
    model.train()
    for data, target in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()


def validate(model, loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in loader:
            correct += model(data).argmax(dim=1).eq(target).sum().item()
    return correct / len(loader.dataset)


def trial(lr, wd, train_loader, val_loader, epochs=3):
    torch.manual_seed(0)
    model = SmallCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=wd)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    for _ in range(epochs):
        train_one_epoch(model, train_loader, optimizer)
        scheduler.step()
    return validate(model, val_loader)


def main():
    tf = transforms.ToTensor()
    train_loader = DataLoader(datasets.MNIST("data", train=True, download=True, transform=tf), batch_size=128, shuffle=True)
    val_loader = DataLoader(datasets.MNIST("data", train=False, transform=tf), batch_size=512)
    results = {}
    for lr, wd in itertools.product([0.1, 0.03, 0.01], [0.0, 5e-4]):
        results[f"lr={lr},wd={wd}"] = trial(lr, wd, train_loader, val_loader)
        print(lr, wd, results[f"lr={lr},wd={wd}"])
    best = max(results, key=results.get)
    print("best:", best)
    with open("sweep.json", "w") as fh:
        json.dump(results, fh, indent=2)


if __name__ == "__main__":
    main()
