"""A train loop that clears gradients only on the AMP branch; the fp32 branch accumulates forever."""
import torch
import torch.nn.functional as F


def train(model, loader, optimizer, scheduler, use_amp=False, epochs=10):
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    meters = {"loss": 0.0, "ce": 0.0}
    for epoch in range(epochs):
        model.train()
        for step, (x, y) in enumerate(loader):
            if use_amp:
                optimizer.zero_grad()
                with torch.autocast("cuda", dtype=torch.float16):
                    loss = F.cross_entropy(model(x), y)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()  # expect: TL001
            meters["loss"] += loss  # expect: TL010
            meters["ce"] += loss.item()
            scheduler.step()
        print(epoch, {k: float(v) / len(loader) for k, v in meters.items()})
