"""Heatmap regression for keypoints, gradients summed over several loader batches per update.

The update sets the window counter to one instead of zero: `if seen == 0:` never holds again
after the first update of an epoch, so every later update also applies the gradients of all
earlier windows.
"""
import torch
from torch import nn
from torch.utils.data import DataLoader


def masked_mse(pred, target, mask, batch_size):
    return ((pred - target) ** 2 * mask).sum() / 2 / batch_size


def train(net, dataset, batches_per_update=4, epochs=50, log_every=100):
    loader = DataLoader(dataset, batch_size=8, shuffle=True, num_workers=4)
    optimizer = torch.optim.Adam(net.parameters(), lr=4e-5)
    net = nn.DataParallel(net).cuda()
    net.train()
    updates = 0
    for epoch in range(epochs):
        running = 0.0
        seen = 0
        for sample in loader:
            if seen == 0:
                optimizer.zero_grad()
            images = sample["image"].cuda()
            heatmaps = sample["heatmaps"].cuda()
            mask = sample["mask"].cuda()
            outputs = net(images)
            loss = sum(masked_mse(out, heatmaps, mask, images.shape[0]) for out in outputs)
            loss = loss / batches_per_update
            loss.backward()
            running += loss.item()
            seen += 1
            if seen == batches_per_update:
                optimizer.step()  # expect: TL001
                seen = 1
                updates += 1
            else:
                continue
            if updates % log_every == 0:
                print(f"epoch {epoch} update {updates}: loss {running / log_every:.5f}")
                running = 0.0
        torch.save({"net": net.module.state_dict(), "optimizer": optimizer.state_dict()}, f"pose_{epoch}.pth")
