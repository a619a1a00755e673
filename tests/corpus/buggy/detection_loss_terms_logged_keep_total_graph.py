"""Detector training whose criterion returns a dict of loss terms; the log converts only the side terms."""

import time

import torch


def train_one_epoch(model, criterion, optimizer, loader, device, log_every=50):
    model.train()
    epoch_loss = 0.0
    started = time.time()
    for step, (images, targets) in enumerate(loader):
        images = images.to(device)
        terms = criterion(model(images), targets)
        optimizer.zero_grad()
        terms["loss"].backward()
        optimizer.step()

        summary = ""
        for position, (name, value) in enumerate(terms.items()):
            if name == "loss":
                continue
            terms[name] = value.item()
            summary += f"{name}: {terms[name]:.4f}"
            if position < len(terms) - 1:
                summary += ", "
        epoch_loss += terms["loss"]  # expect: TL010
        if step % log_every == 0:
            print(f"step {step} {summary} ({time.time() - started:.1f}s)")
    return epoch_loss / max(len(loader), 1)


def fit(model, criterion, loader, epochs=10, lr=1e-3):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    for epoch in range(epochs):
        mean = train_one_epoch(model, criterion, optimizer, loader, device)
        print(f"epoch {epoch}: {mean:.4f}")
