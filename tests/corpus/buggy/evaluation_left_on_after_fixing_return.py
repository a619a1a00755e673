"""Fine-tuning a classifier; the evaluation after each epoch leaves autograd on."""

import torch
from torch import nn


class FineTuner:
    def __init__(self, net, train_loader, val_loader):
        self.net = net
        self.train_loader = train_loader
        self.val_loader = val_loader
        self.criterion = nn.CrossEntropyLoss()
        self.optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

    def evaluate(self):
        self.net.eval()
        correct = 0
        for images, labels in self.val_loader:
            correct += (self.net(images).argmax(1) == labels).sum().item()  # expect: TL006
        print("accuracy", correct / len(self.val_loader.dataset))
        self.net.train()

    def fit(self, epochs):
        self.net.train()
        for _ in range(epochs):
            for images, labels in self.train_loader:
                self.optimizer.zero_grad()
                self.criterion(self.net(images), labels).backward()
                self.optimizer.step()
            self.evaluate()
