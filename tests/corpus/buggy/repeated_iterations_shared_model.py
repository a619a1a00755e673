"""A loop over iterations that rebuilds the optimizer over one model built before it: every
iteration continues training the same network with a fresh Adam, and a 2-D segmentation head
is rebuilt each iteration (a layer with weights, unlike the NLLLoss2d criterion beside it)."""

import torch
from torch import nn


def run_epochs(model, head, optimizer, loader, epochs, class_weights):
    for epoch in range(epochs):
        criterion = nn.NLLLoss2d(weight=class_weights)
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(head(model(x)).log_softmax(1), y)
            loss.backward()
            optimizer.step()


def main(opt, model, loader):
    for iteration in range(opt.iter_num):
        head = nn.Conv2d(opt.channels, opt.num_classes, 1)  # expect: TL003
        optimizer = torch.optim.Adam(list(model.parameters()) + list(head.parameters()), opt.lr)  # expect: TL004
        run_epochs(model, head, optimizer, loader, opt.epochs, opt.class_weights)
