"""The same sampler done right: eval mode and no-grad for the validation batch, train mode back
after it; the noise sampler of the unconditional GAN is no evaluation at all."""
import torch
from torchvision.utils import save_image


@torch.no_grad()
def sample_images(generator, val_dataloader, batches_done, device):
    generator.eval()
    imgs = next(iter(val_dataloader))
    real_A = imgs["B"].to(device)
    save_image(torch.cat((real_A, generator(real_A)), -2), f"images/{batches_done}.png", nrow=5, normalize=True)
    generator.train()


def sample_noise(generator, batches_done, latent_dim=100, device="cuda"):
    save_image(generator(torch.randn(64, latent_dim, 1, 1, device=device)), f"images/noise_{batches_done}.png")


def train(generator, dataloader, val_dataloader, criterion, epochs=200, device="cuda"):
    optimizer_G = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    for epoch in range(epochs):
        for i, batch in enumerate(dataloader):
            optimizer_G.zero_grad()
            criterion(generator(batch["B"].to(device)), batch["A"].to(device)).backward()
            optimizer_G.step()
            if i % 500 == 0:
                sample_images(generator, val_dataloader, i, device)
                sample_noise(generator, i, device=device)
