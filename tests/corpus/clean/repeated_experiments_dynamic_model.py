"""Long-range forecasting: the same experiment repeated `iter_num` times for mean metrics; each
repeat builds the model class named on the command line, its optimizer, and trains it to the end.
The per-epoch criterion is the deprecated 2-D NLL loss, a criterion with no parameters."""

import argparse

import numpy as np
import torch
from torch import nn

import forecasters


def run_epochs(model, optimizer, scheduler, loader, epochs, class_weights):
    for epoch in range(epochs):
        criterion = nn.NLLLoss2d(weight=class_weights)
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
        scheduler.step()
    return validate(model)


def experiment(opt, index):
    model = getattr(forecasters, opt.model).Model(opt)
    model.to(opt.device)
    optimizer = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), opt.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1, gamma=opt.lr_step)
    return run_epochs(model, optimizer, scheduler, make_loader(opt), opt.epochs, opt.class_weights)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="Pyraformer")
    parser.add_argument("--iter_num", type=int, default=5)
    opt = parser.parse_args()
    metrics = []
    for i in range(opt.iter_num):
        metrics.append(experiment(opt, i))
    print(np.mean(metrics, axis=0))
