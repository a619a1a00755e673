"""MNIST classifier with four silent training bugs.

Each buggy line ends with an ``# expect: CODE`` comment naming the torchlint rule
that reports it; ``tests/test_examples.py`` checks that exactly these are found.
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout = nn.Dropout(0.25)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(self.dropout(x), 1)
        return self.fc2(F.relu(self.fc1(x)))


def train(model, device, loader, optimizer, scheduler, epoch):
    model.train()
    running_loss = 0.0
    for batch_idx, (data, target) in enumerate(loader):
        data, target = data.to(device), target.to(device)
        output = model(data)
        loss = F.cross_entropy(output, target)
        loss.backward()
        scheduler.step()  # expect: TL015
        optimizer.step()  # expect: TL001
        running_loss += loss  # expect: TL010
        if batch_idx % 100 == 0:
            print(f"epoch {epoch} [{batch_idx}/{len(loader)}] loss {running_loss / (batch_idx + 1):.4f}")


def validate(model, device, loader):
    correct = 0
    for data, target in loader:
        data, target = data.to(device), target.to(device)
        output = model(data)  # expect: TL005, TL006
        correct += output.argmax(dim=1).eq(target).sum().item()
    return correct / len(loader.dataset)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--lr", type=float, default=0.01)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    train_loader = DataLoader(
        datasets.MNIST("data", train=True, download=True, transform=transform), batch_size=64, shuffle=True
    )
    test_loader = DataLoader(datasets.MNIST("data", train=False, transform=transform), batch_size=1000)
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    scheduler = StepLR(optimizer, step_size=1000, gamma=0.7)
    for epoch in range(1, args.epochs + 1):
        train(model, device, train_loader, optimizer, scheduler, epoch)
        print(f"epoch {epoch}: val accuracy {validate(model, device, test_loader):.3f}")


if __name__ == "__main__":
    main()
