"""A LightningModule for a small autoencoder, with one automatic and one manual-optimization variant."""
import torch
import torch.nn.functional as F
from torch import nn
import lightning.pytorch as pl


class Encoder(nn.Module):
    def __init__(self, dim=784, hidden=128, code=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, code))

    def forward(self, x):
        return self.net(x)


class AutoEncoder(pl.LightningModule):
    def __init__(self, lr=1e-3, p_drop=0.1):
        super().__init__()
        self.save_hyperparameters()
        self.encoder = Encoder()
        self.decoder = nn.Sequential(nn.Linear(16, 128), nn.ReLU(), nn.Linear(128, 784))

    def forward(self, x):
        z = self.encoder(x.view(x.size(0), -1))
        z = F.dropout(z, p=self.hparams.p_drop, training=self.training)
        return self.decoder(z)

    def training_step(self, batch, batch_idx):
        x, _ = batch
        recon = self(x)
        loss = F.mse_loss(recon, x.view(x.size(0), -1))
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, _ = batch
        recon = self(x)
        val_loss = F.mse_loss(recon, x.view(x.size(0), -1))
        self.log("val/loss", val_loss)

    def test_step(self, batch, batch_idx):
        x, _ = batch
        self.log("test/loss", F.mse_loss(self(x), x.view(x.size(0), -1)))

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
        return {"optimizer": opt, "lr_scheduler": sched}


class ManualAutoEncoder(AutoEncoder):
    """Same model, but the step is driven by hand (e.g. to clip per-parameter-group)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.automatic_optimization = False

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        sched = self.lr_schedulers()
        x, _ = batch
        loss = F.mse_loss(self(x), x.view(x.size(0), -1))
        opt.zero_grad()
        self.manual_backward(loss)
        self.clip_gradients(opt, gradient_clip_val=1.0, gradient_clip_algorithm="norm")
        opt.step()
        if self.trainer.is_last_batch:
            sched.step()
        self.log("train/loss", loss.detach())
