"""A VAE trained as a script; after each epoch a grid of images is decoded from prior noise for
the log, under no-grad."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision import datasets, transforms
from torchvision.utils import save_image

LATENT = 16
device = "cuda" if torch.cuda.is_available() else "cpu"


class VAE(nn.Module):
    def __init__(self, latent=LATENT):
        super().__init__()
        self.enc = nn.Sequential(nn.Flatten(), nn.Linear(784, 400), nn.ReLU())
        self.mu = nn.Linear(400, latent)
        self.logvar = nn.Linear(400, latent)
        self.dec = nn.Sequential(nn.Linear(latent, 400), nn.ReLU(), nn.Linear(400, 784), nn.Sigmoid())

    def decode(self, z):
        return self.dec(z).view(-1, 1, 28, 28)

    def forward(self, x):
        h = self.enc(x)
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return self.decode(z), mu, logvar


@torch.no_grad()
def prior_grid(decoder, rows=8):
    tiles = []
    for _ in range(rows):
        z = torch.randn(rows, LATENT, device=device)
        tiles.append(decoder(z).cpu())
    return torch.cat(tiles)


train_set = datasets.MNIST("data", train=True, download=True, transform=transforms.ToTensor())
loader = torch.utils.data.DataLoader(train_set, batch_size=128, shuffle=True)
vae = VAE().to(device)
optimizer = torch.optim.Adam(vae.parameters(), lr=1e-3)

for epoch in range(20):
    vae.train()
    for images, _ in loader:
        images = images.to(device)
        recon, mu, logvar = vae(images)
        kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = F.binary_cross_entropy(recon, images, reduction="sum") + kl
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    vae.eval()
    save_image(prior_grid(vae.decode), f"samples/prior_{epoch:02d}.png", nrow=8)
