"""A trainer that either restores model and optimizer from a checkpoint (already on the right
device) or builds them fresh, moving the model before the optimizer is constructed."""
import torch
import torch.nn as nn


def restore(path, device):
    checkpoint = torch.load(path, map_location=device)
    return checkpoint["model"], checkpoint["optimizer"], checkpoint["epoch"] + 1


def build(args, device):
    if args.resume:
        model, optimizer, start_epoch = restore(args.resume, device)
        model.to(device)
    else:
        model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, args.num_classes)).to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
        start_epoch = 0
    return model, optimizer, start_epoch


def fit(args, loader, device):
    model, optimizer, start_epoch = build(args, device)
    for epoch in range(start_epoch, args.epochs):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x.to(device)), y.to(device))
            loss.backward()
            optimizer.step()
        torch.save({"model": model, "optimizer": optimizer, "epoch": epoch}, args.checkpoint)
