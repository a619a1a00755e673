"""A DCGAN-style training script where only one of the two optimizers is cleared,
the generator's optimizer is rebuilt every epoch, and sampling leaves the
generator in eval mode for the rest of training.

Each buggy line ends with an ``# expect: CODE`` comment naming the torchlint rule
that reports it; ``tests/test_examples.py`` checks that exactly these are found.
"""

import torch
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self, nz=100, ngf=64):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, 3, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self, ndf=64):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(3, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, 1, 4, 1, 0, bias=False),
            nn.Flatten(),
            nn.Sigmoid(),
        )

    def forward(self, x):
        return self.main(x)


def train(loader, epochs=25, nz=100, device="cpu"):
    netG, netD = Generator(nz).to(device), Discriminator().to(device)
    criterion = nn.BCEWithLogitsLoss()
    optD = torch.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    fixed_noise = torch.randn(64, nz, 1, 1, device=device)
    for epoch in range(epochs):
        optG = torch.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))  # expect: TL004
        for real, _ in loader:
            real = real.to(device)
            noise = torch.randn(real.size(0), nz, 1, 1, device=device)
            fake = netG(noise)

            optD.zero_grad()
            real_out = netD(real).view(-1)
            fake_out = netD(fake.detach()).view(-1)
            lossD = criterion(real_out, torch.ones_like(real_out)) + criterion(  # expect: TL020
                fake_out, torch.zeros_like(fake_out)
            )
            lossD.backward()
            optD.step()

            gen_out = netD(fake).view(-1)
            lossG = criterion(gen_out, torch.ones_like(gen_out))  # expect: TL020
            lossG.backward()
            optG.step()  # expect: TL001

        netG.eval()  # expect: TL007
        with torch.no_grad():
            samples = netG(fixed_noise)
        torch.save(samples, f"samples_{epoch}.pt")
