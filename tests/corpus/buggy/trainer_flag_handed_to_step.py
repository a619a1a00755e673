"""Buggy twin: the no-grad validation pass hands training=True down to the step that runs backward."""

import torch
from torch import nn


class Trainer:
    def __init__(self, model, optimizer, grad_clip=0.0):
        self.model = model
        self.optimizer = optimizer
        self.criterion = nn.CrossEntropyLoss()
        self.grad_clip = grad_clip

    def _step(self, inputs, target, training=False):
        output = self.model(inputs)
        loss = self.criterion(output, target)
        if training:
            self.optimizer.zero_grad()
            loss.backward()  # expect: TL016
            if self.grad_clip > 0:
                nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip)
            self.optimizer.step()
        return output.detach(), float(loss)

    def forward(self, loader, training=False):
        correct, total, seen = 0, 0.0, 0
        for inputs, target in loader:
            output, loss = self._step(inputs, target, training=training)
            correct += int(output.argmax(1).eq(target).sum())
            total += loss * inputs.size(0)
            seen += inputs.size(0)
        return total / seen, correct / seen

    def train(self, loader):
        self.model.train()
        return self.forward(loader, training=True)

    def validate(self, loader):
        self.model.eval()
        with torch.no_grad():
            return self.forward(loader, training=True)


def main(train_loader, val_loader, epochs=10):
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 10))
    trainer = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1))
    for _ in range(epochs):
        trainer.train(train_loader)
        print(trainer.validate(val_loader))
