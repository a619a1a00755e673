"""A GAN loop that clears the discriminator's gradients but never the generator's."""
import torch
import torch.nn as nn


def make_mlp(d_in, d_out, hidden=256):
    return nn.Sequential(nn.Linear(d_in, hidden), nn.LeakyReLU(0.2), nn.Linear(hidden, d_out))


def train_gan(loader, z_dim=64, x_dim=784, epochs=50):
    G = make_mlp(z_dim, x_dim)
    D = make_mlp(x_dim, 1)
    opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
    bce = nn.BCEWithLogitsLoss()
    for epoch in range(epochs):
        for real, _ in loader:
            real = real.view(real.size(0), -1)
            n = real.size(0)
            z = torch.randn(n, z_dim)
            fake = G(z)

            opt_d.zero_grad()
            d_loss = bce(D(real), torch.ones(n, 1)) + bce(D(fake.detach()), torch.zeros(n, 1))
            d_loss.backward()
            opt_d.step()

            g_loss = bce(D(fake), torch.ones(n, 1))
            g_loss.backward()
            opt_g.step()  # expect: TL001
        print(f"epoch {epoch}: d {d_loss.item():.3f} g {g_loss.item():.3f}")
    return G
