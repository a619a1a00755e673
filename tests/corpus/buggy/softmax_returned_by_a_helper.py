"""The probabilities come from a helper of the file: everything `class_probabilities` returns is a
softmax output, and the training loop hands it to cross-entropy (and so does `self.forward(x)` of a
module whose forward ends in a softmax)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def class_probabilities(net, x):
    return F.softmax(net(x), dim=1)


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        return torch.softmax(self.fc(x), dim=-1)

    def loss(self, x, y):
        return F.cross_entropy(self.forward(x), y)  # expect: TL012


def train(net, loader, epochs=3):
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for epoch in range(epochs):
        for x, y in loader:
            opt.zero_grad()
            loss = F.cross_entropy(class_probabilities(net, x), y)  # expect: TL012
            loss.backward()
            opt.step()
