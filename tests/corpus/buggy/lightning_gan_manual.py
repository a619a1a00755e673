"""A Lightning GAN with manual optimization that never clears the generator's gradients."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import lightning.pytorch as pl


class WGANGP(pl.LightningModule):
    def __init__(self, generator, critic, z_dim=128, n_critic=5, gp_weight=10.0):
        super().__init__()
        self.automatic_optimization = False
        self.generator = generator
        self.critic = critic
        self.z_dim, self.n_critic, self.gp_weight = z_dim, n_critic, gp_weight

    def gradient_penalty(self, real, fake):
        eps = torch.rand(real.size(0), 1, 1, 1, device=self.device)
        mixed = (eps * real + (1 - eps) * fake).requires_grad_(True)
        grad, = torch.autograd.grad(self.critic(mixed).sum(), mixed, create_graph=True)
        return ((grad.flatten(1).norm(dim=1) - 1) ** 2).mean()

    def training_step(self, batch, batch_idx):
        opt_g, opt_c = self.optimizers()
        real, _ = batch
        z = torch.randn(real.size(0), self.z_dim, device=self.device)
        fake = self.generator(z)

        opt_c.zero_grad()
        c_loss = self.critic(fake.detach()).mean() - self.critic(real).mean()
        c_loss = c_loss + self.gp_weight * self.gradient_penalty(real, fake.detach())
        self.manual_backward(c_loss)
        opt_c.step()

        if batch_idx % self.n_critic == 0:
            g_loss = -self.critic(fake).mean()
            self.manual_backward(g_loss)
            opt_g.step()  # expect: TL001
            self.log("g_loss", g_loss, prog_bar=True)
        self.log("c_loss", c_loss, prog_bar=True)

    def configure_optimizers(self):
        opt_g = torch.optim.Adam(self.generator.parameters(), lr=1e-4, betas=(0.0, 0.9))
        opt_c = torch.optim.Adam(self.critic.parameters(), lr=1e-4, betas=(0.0, 0.9))
        return [opt_g, opt_c]
