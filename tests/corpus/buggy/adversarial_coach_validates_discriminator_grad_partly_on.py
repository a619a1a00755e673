"""A GAN coach whose validation scores the discriminator through a helper that samples under
no-grad but scores the samples after the block, with autograd on."""

import torch
import torch.nn.functional as F


class Coach:
    def __init__(self, generator, discriminator, val_loader, device):
        self.generator = generator.to(device)
        self.discriminator = discriminator.to(device)
        self.val_loader = val_loader
        self.device = device

    def validate(self):
        self.generator.eval()
        self.discriminator.eval()
        logs = []
        for images, _ in self.val_loader:
            images = images.to(self.device)
            disc_log = self.validate_discriminator(images)
            with torch.no_grad():
                fakes = self.generator(torch.randn(images.shape[0], 128, device=self.device))
                recon = F.l1_loss(fakes, images).item()
            logs.append({**disc_log, "recon": recon})
        self.generator.train()
        self.discriminator.train()
        return logs

    def validate_discriminator(self, images):
        """Hinge losses on real and generated samples, for logging only."""
        with torch.no_grad():
            noise = torch.randn(images.shape[0], 128, device=self.device)
            fakes = self.generator(noise)
        real_logits = self.discriminator(images)  # expect: TL006
        fake_logits = self.discriminator(fakes)
        loss = F.relu(1 - real_logits).mean() + F.relu(1 + fake_logits).mean()
        return {"disc_loss": float(loss)}
