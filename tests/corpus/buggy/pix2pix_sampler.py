"""An image-to-image GAN whose sampler shows the generator's output on one validation batch every
few hundred steps: with autograd on (and once without even switching to eval mode)."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision.utils import save_image


class UNetDown(nn.Module):
    def __init__(self, in_size, out_size, dropout=0.0):
        super().__init__()
        layers = [nn.Conv2d(in_size, out_size, 4, 2, 1, bias=False), nn.InstanceNorm2d(out_size), nn.LeakyReLU(0.2)]
        if dropout:
            layers.append(nn.Dropout(dropout))
        self.model = nn.Sequential(*layers)

    def forward(self, x):
        return self.model(x)


def sample_images(generator, val_dataloader, batches_done, device):
    imgs = next(iter(val_dataloader))
    real_A = imgs["B"].to(device)
    fake_B = generator(real_A)  # expect: TL005, TL006
    save_image(torch.cat((real_A, fake_B), -2), f"images/{batches_done}.png", nrow=5, normalize=True)


def sample_eval(generator, val_dataloader, batches_done, device):
    generator.eval()
    imgs = next(iter(val_dataloader))
    fake_B = generator(imgs["B"].to(device))  # expect: TL006
    save_image(fake_B, f"images/eval_{batches_done}.png", normalize=True)
    generator.train()


def train(generator, discriminator, dataset, val_dataset, epochs=200, device="cuda"):
    dataloader = DataLoader(dataset, batch_size=1, shuffle=True)
    val_dataloader = DataLoader(val_dataset, batch_size=10, shuffle=True)
    optimizer_G = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    criterion_GAN, criterion_pixel = nn.MSELoss(), nn.L1Loss()
    for epoch in range(epochs):
        for i, batch in enumerate(dataloader):
            real_A, real_B = batch["B"].to(device), batch["A"].to(device)
            optimizer_G.zero_grad()
            fake_B = generator(real_A)
            pred_fake = discriminator(fake_B, real_A)
            loss_G = criterion_GAN(pred_fake, torch.ones_like(pred_fake)) + 100 * criterion_pixel(fake_B, real_B)
            loss_G.backward()
            optimizer_G.step()
            optimizer_D.zero_grad()
            pred_real = discriminator(real_B, real_A)
            pred_fake = discriminator(fake_B.detach(), real_A)
            loss_D = 0.5 * (
                criterion_GAN(pred_real, torch.ones_like(pred_real)) + criterion_GAN(pred_fake, torch.zeros_like(pred_fake))
            )
            loss_D.backward()
            optimizer_D.step()
            batches_done = epoch * len(dataloader) + i
            if batches_done % 500 == 0:
                sample_images(generator, val_dataloader, batches_done, device)
                sample_eval(generator, val_dataloader, batches_done, device)


class GeneratorUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.down1 = UNetDown(3, 64)
        self.down2 = nn.Sequential(UNetDown(64, 128), nn.Dropout(0.5))

    def forward(self, x):
        return self.down2(self.down1(x))


if __name__ == "__main__":
    train(GeneratorUNet(), Discriminator(), train_set, val_set)
