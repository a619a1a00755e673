"""A training script split into small helpers; the bugs hide in the helpers."""
import torch
import torch.nn.functional as F


def reset_grads(model):
    for p in model.parameters():
        p.grad = None


def compute_loss(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)


@torch.no_grad()
def predict(model, loader):
    model.eval()
    preds = []
    for x, _ in loader:
        preds.append(model(x).argmax(-1))
    return torch.cat(preds)


def train(model, loader, test_loader, accum=4, epochs=3, clip=1.0, use_amp=True):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    for epoch in range(epochs):
        model.train()
        for i, batch in enumerate(loader):
            with torch.autocast("cuda", enabled=use_amp):
                loss = compute_loss(model, batch)
            scaler.scale(loss).backward()  # expect: TL009
            if (i + 1) % accum == 0:
                if clip:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)  # expect: TL014
                scaler.step(optimizer)
                scaler.update()
                reset_grads(model)
        preds = predict(model, test_loader)
        print(epoch, preds.float().mean().item())
