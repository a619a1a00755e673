"""Vanilla GAN on flattened MNIST whose discriminator, written with functional dropout, is
also scored on held-out digits in eval mode after training: there its dropout stays on."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim
from torchvision import datasets, transforms
from torchvision.utils import save_image

LATENT = 64


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(LATENT, 256), nn.LeakyReLU(0.2), nn.BatchNorm1d(256), nn.Linear(256, 784), nn.Tanh()
        )

    def forward(self, z):
        return self.net(z)


class Discriminator(nn.Module):
    def __init__(self, hidden=512):
        super().__init__()
        self.fc1 = nn.Linear(784, hidden)
        self.fc2 = nn.Linear(hidden, hidden // 2)
        self.fc3 = nn.Linear(hidden // 2, 1)

    def forward(self, x):
        h = F.dropout(F.leaky_relu(self.fc1(x), 0.2), 0.3)  # expect: TL011
        h = F.dropout(F.leaky_relu(self.fc2(h), 0.2), 0.3)  # expect: TL011
        return torch.sigmoid(self.fc3(h))


def save_samples(epoch, noise):
    gen.eval()
    with torch.no_grad():
        images = gen(noise).view(-1, 1, 28, 28)
    gen.train()
    save_image(images, f"samples/{epoch:03d}.png", normalize=True)


if __name__ == "__main__":
    device = "cuda" if torch.cuda.is_available() else "cpu"
    data = datasets.MNIST("data", download=True, transform=transforms.Compose([transforms.ToTensor()]))
    loader = torch.utils.data.DataLoader(data, batch_size=128, shuffle=True)
    gen = Generator().to(device)
    disc = Discriminator().to(device)
    opt_g = optim.Adam(gen.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = optim.Adam(disc.parameters(), lr=2e-4, betas=(0.5, 0.999))
    fixed = torch.randn(36, LATENT, device=device)
    for epoch in range(50):
        for real, _ in loader:
            real = real.view(real.size(0), -1).to(device) * 2 - 1
            ones = torch.ones(real.size(0), 1, device=device)
            zeros = torch.zeros(real.size(0), 1, device=device)
            fake = gen(torch.randn(real.size(0), LATENT, device=device))
            opt_d.zero_grad()
            d_loss = F.binary_cross_entropy(disc(real), ones) + F.binary_cross_entropy(disc(fake.detach()), zeros)
            d_loss.backward()
            opt_d.step()
            opt_g.zero_grad()
            g_loss = F.binary_cross_entropy(disc(fake), ones)
            g_loss.backward()
            opt_g.step()
        save_samples(epoch, fixed)
    held_out = datasets.MNIST("data", train=False, transform=transforms.ToTensor())
    disc.eval()
    with torch.no_grad():
        real_scores = [disc(x.view(x.size(0), -1).to(device) * 2 - 1).mean().item() for x, _ in
                       torch.utils.data.DataLoader(held_out, batch_size=256)]
    print("mean D(real) on held-out digits:", sum(real_scores) / len(real_scores))
