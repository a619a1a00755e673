"""The training step receives its loss object from the caller: `crit` is the cross-entropy that
main() builds, so the probabilities handed to it are softmaxed twice."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self, d_in, n_classes):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d_in, 128), nn.ReLU(), nn.Linear(128, n_classes))

    def forward(self, x):
        return self.body(x)


def train_step(net, crit, opt, x, y):
    opt.zero_grad()
    probs = F.softmax(net(x), dim=1)
    loss = crit(probs, y)  # expect: TL012
    loss.backward()
    opt.step()
    return loss.item()


def main(loader, epochs=10):
    net = Classifier(32, 10)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    for epoch in range(epochs):
        for x, y in loader:
            train_step(net, nn.CrossEntropyLoss(label_smoothing=0.1), opt, x, y)
