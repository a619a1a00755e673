"""DCGAN on 64x64 images: discriminator and generator, each with its own optimizer."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

NZ = 100


class Generator(nn.Module):
    def __init__(self, ngf=64):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(NZ, ngf * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 8), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, 3, 8, 4, 2, bias=False), nn.Tanh(),
        )

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self, ndf=64):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(3, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 4), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 4, 1, 8, 1, 0, bias=False),
        )

    def forward(self, x):
        return self.main(x).view(-1)


def train(root, epochs=25, device="cuda"):
    tf = transforms.Compose([transforms.Resize(64), transforms.CenterCrop(64), transforms.ToTensor(),
                             transforms.Normalize((0.5,) * 3, (0.5,) * 3)])
    loader = DataLoader(datasets.ImageFolder(root, tf), batch_size=128, shuffle=True, num_workers=4)
    netG, netD = Generator().to(device), Discriminator().to(device)
    criterion = nn.BCEWithLogitsLoss()
    optD = torch.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optG = torch.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
    fixed_noise = torch.randn(64, NZ, 1, 1, device=device)

    for epoch in range(epochs):
        for i, (real, _) in enumerate(loader):
            real = real.to(device)
            b = real.size(0)
            # discriminator: real vs detached fakes
            netD.zero_grad()
            errD_real = criterion(netD(real), torch.ones(b, device=device))
            noise = torch.randn(b, NZ, 1, 1, device=device)
            fake = netG(noise)
            errD_fake = criterion(netD(fake.detach()), torch.zeros(b, device=device))
            (errD_real + errD_fake).backward()
            optD.step()
            # generator: fool the discriminator
            netG.zero_grad()
            errG = criterion(netD(fake), torch.ones(b, device=device))
            errG.backward()
            optG.step()
            if i % 100 == 0:
                print(f"[{epoch}/{epochs}][{i}] D {(errD_real + errD_fake).item():.3f} G {errG.item():.3f}")
        with torch.no_grad():
            netG.eval()
            samples = netG(fixed_noise).cpu()
            netG.train()
        torch.save(samples, f"samples_{epoch:03d}.pt")


if __name__ == "__main__":
    train("data/celeba")
