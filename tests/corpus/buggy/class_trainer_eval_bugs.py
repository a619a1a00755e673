"""A trainer whose validation runs in train mode and whose inline test loop keeps autograd on."""
import torch
import torch.nn as nn
import torchvision


class Trainer:
    def __init__(self, model, optimizer, train_loader, val_loader, test_loader, device="cuda"):
        self.model = model.to(device)
        self.optimizer = optimizer
        self.train_loader, self.val_loader, self.test_loader = train_loader, val_loader, test_loader
        self.criterion = nn.CrossEntropyLoss()
        self.device = device

    def train_epoch(self):
        self.model.train()
        for x, y in self.train_loader:
            x, y = x.to(self.device), y.to(self.device)
            self.optimizer.zero_grad()
            self.criterion(self.model(x), y).backward()
            self.optimizer.step()

    @torch.no_grad()
    def validate(self):
        total = 0.0
        for x, y in self.val_loader:
            out = self.model(x.to(self.device))  # expect: TL005
            total += self.criterion(out, y.to(self.device)).item()
        return total / len(self.val_loader)

    def fit(self, epochs):
        history = []
        for epoch in range(epochs):
            self.train_epoch()
            history.append(self.validate())
        self.model.eval()
        correct = 0
        for x, y in self.test_loader:
            pred = self.model(x.to(self.device)).argmax(1)  # expect: TL006
            correct += (pred.cpu() == y).sum().item()
        print("test accuracy", correct / len(self.test_loader.dataset))
        return history


if __name__ == "__main__":
    net = torchvision.models.resnet18(num_classes=10)
    Trainer(net, torch.optim.SGD(net.parameters(), lr=0.1), train_loader, val_loader, test_loader, "cuda").fit(10)
