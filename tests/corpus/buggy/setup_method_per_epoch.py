"""A trainer that (re)creates its optimizer and scheduler in a setup method called every epoch."""
import torch
import torch.nn as nn


class ClassifierTrainer:
    def __init__(self, model, loader, base_lr=0.1, epochs=30):
        self.model = model
        self.loader = loader
        self.base_lr = base_lr
        self.epochs = epochs
        self.criterion = nn.CrossEntropyLoss(label_smoothing=0.1)

    def setup_optimization(self, epoch):
        lr = self.base_lr * (0.1 ** (epoch // 10))
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr, momentum=0.9, nesterov=True)  # expect: TL004

    def train_epoch(self):
        self.model.train()
        for x, y in self.loader:
            self.optimizer.zero_grad()
            loss = self.criterion(self.model(x), y)
            loss.backward()
            self.optimizer.step()
        return loss.item()

    def fit(self):
        for epoch in range(self.epochs):
            self.setup_optimization(epoch)
            loss = self.train_epoch()
            print(f"epoch {epoch}: lr {self.optimizer.param_groups[0]['lr']:.4f} loss {loss:.4f}")
