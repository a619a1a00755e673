"""Image denoiser: the MSE summed for the epoch's log is computed from the restoration without
detaching it, so the running total keeps every step's graph."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader


class Denoiser(nn.Module):
    def __init__(self, channels=3, width=32):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(channels, width, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(width, channels, 3, padding=1),
        )

    def forward(self, x):
        return self.body(x)


def run(datasets, epochs=10, lr=2e-4):
    net = Denoiser().cuda()
    optimizer = torch.optim.Adam(net.parameters(), lr=lr)
    loaders = {split: DataLoader(datasets[split], batch_size=16, shuffle=split == "train") for split in datasets}
    for epoch in range(epochs):
        mse_sum = {split: 0.0 for split in loaders}
        net.train()
        for step, batch in enumerate(loaders["train"]):
            noisy, clean = [t.cuda(non_blocking=True) for t in batch]
            optimizer.zero_grad()
            noise = net(noisy)
            loss = F.l1_loss(noise, noisy - clean)
            loss.backward()
            optimizer.step()
            restored = noisy - noise
            mse = F.mse_loss(restored, clean)
            mse_sum["train"] += mse  # expect: TL010
        print(f"epoch {epoch}: train mse {mse_sum['train'] / len(loaders['train']):.5f}")
    return net
