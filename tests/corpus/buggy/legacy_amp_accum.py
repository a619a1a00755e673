"""Legacy torch.cuda.amp code: default-fp16 autocast without a scaler, and scaled accumulation without division."""
import torch
import torch.nn.functional as F
from torch.cuda.amp import GradScaler, autocast


def train_fp16(model, loader, optimizer, epochs=1):
    for epoch in range(epochs):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            with autocast():
                loss = F.cross_entropy(model(x.cuda()), y.cuda())
            loss.backward()  # expect: TL018
            optimizer.step()


def train_accumulated(model, loader, optimizer, accum=4, epochs=1):
    scaler = GradScaler()
    for epoch in range(epochs):
        model.train()
        for i, (x, y) in enumerate(loader):
            with autocast():
                loss = F.cross_entropy(model(x.cuda()), y.cuda())
            scaler.scale(loss).backward()  # expect: TL009
            if (i + 1) % accum == 0:
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
