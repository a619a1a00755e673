"""Tabular regressor: one epoch function for training and scoring, scoring calls share a kwargs dict."""

import torch
from torch import nn

from data import make_loaders

train_loader, valid_loader, test_loader = make_loaders("prices.csv", batch_size=512)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = nn.MSELoss()


def run_epoch(loader, net, criterion, is_train, opt):
    net.train(is_train)
    total = 0.0
    for feats, target in loader:
        loss = criterion(net(feats), target)
        total += loss.item() * len(feats)
        if is_train and opt is not None:
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_value_(net.parameters(), 3.0)
            opt.step()
    return total / len(loader.dataset)


def score_all():
    with torch.no_grad():
        common = {"net": model, "criterion": loss_fn, "is_train": False, "opt": None}
        return [run_epoch(loader, **common) for loader in (train_loader, valid_loader, test_loader)]


for epoch in range(50):
    run_epoch(train_loader, model, loss_fn, True, optimizer)
    print(epoch, score_all())
