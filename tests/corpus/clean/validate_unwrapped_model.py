"""Periodic validation of the unwrapped network; train() on the model restores it."""

import torch
import torchvision


def evaluate(net, loader):
    correct = 0
    with torch.no_grad():
        for images, labels in loader:
            correct += (net(images).argmax(1) == labels).sum().item()
    return correct


def train(model, train_loader, val_loader, optimizer, steps, period):
    model.train()
    for step, (images, labels) in enumerate(train_loader):
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % period == 0:
            try:
                inner = model.module
            except AttributeError:
                inner = model
            inner.eval()
            print(step, evaluate(inner, val_loader))
            model.train()
        if step == steps:
            break


if __name__ == "__main__":
    net = torchvision.models.resnet18(num_classes=10)
    wrapped = net
    opt = torch.optim.SGD(wrapped.parameters(), lr=0.1)
    train(wrapped, [], [], opt, 1000, 100)
