"""A LightningModule that feeds probabilities to its losses and keeps its heads in a plain list."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import lightning as L


class MultiTask(L.LightningModule):
    def __init__(self, d_in=128, n_classes=5, n_tasks=3):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(d_in, 256), nn.ReLU())
        self.heads = [nn.Linear(256, n_classes) for _ in range(n_tasks)]  # expect: TL013
        self.temperature = torch.ones(1, requires_grad=True)  # expect: TL013
        self.aux = nn.Linear(256, 1)

    def forward(self, x):
        h = self.backbone(x)
        return [head(h) / self.temperature for head in self.heads], self.aux(h)

    def training_step(self, batch, batch_idx):
        x, ys, flag = batch
        logits, aux = self(x)
        probs = [F.softmax(l, dim=-1) for l in logits]
        loss = sum(F.cross_entropy(F.softmax(l, dim=-1), y) for l, y in zip(logits, ys))  # expect: TL012
        p_aux = torch.sigmoid(aux).squeeze(-1)
        loss = loss + F.binary_cross_entropy_with_logits(p_aux, flag.float())  # expect: TL020
        self.log("train/conf", torch.stack([p.max(-1).values.mean() for p in probs]).mean())
        return loss

    def validation_step(self, batch, batch_idx):
        x, ys, _ = batch
        logits, _ = self(x)
        self.log("val/acc", (logits[0].argmax(-1) == ys[0]).float().mean())

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)
