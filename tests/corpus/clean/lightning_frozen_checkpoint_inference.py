"""Batch inference with a Lightning checkpoint: `freeze()` puts the LightningModule in eval mode
and turns off gradients for all of its parameters, so the prediction helper needs no `.eval()` or
`torch.no_grad()` of its own; the report loop reuses the model the helper froze."""

import argparse

import pytorch_lightning as pl
import torch
from torch import nn
from torch.utils.data import DataLoader
from torchvision import datasets, models, transforms


class SceneClassifier(pl.LightningModule):
    def __init__(self, num_classes=10, lr=3e-4):
        super().__init__()
        self.save_hyperparameters()
        self.backbone = models.resnet34(num_classes=num_classes)

    def forward(self, images):
        return self.backbone(images)

    def training_step(self, batch, batch_idx):
        images, labels = batch
        loss = nn.functional.cross_entropy(self(images), labels)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)


def predict_batch(model: pl.LightningModule, images):
    model.freeze()
    probs = model(images).softmax(dim=1)
    return probs.argmax(dim=1), probs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("checkpoint")
    parser.add_argument("--data", default="data/scenes/test")
    args = parser.parse_args()

    tfm = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor()])
    test_loader = DataLoader(datasets.ImageFolder(args.data, transform=tfm), batch_size=64, num_workers=4)
    model = SceneClassifier.load_from_checkpoint(args.checkpoint, map_location="cpu")

    confusions = torch.zeros(10, 10, dtype=torch.long)
    margins = []
    for images, labels in test_loader:
        preds, probs = predict_batch(model, images)
        for t, p in zip(labels.tolist(), preds.tolist()):
            confusions[t, p] += 1
        wrong = images[preds != labels]
        if len(wrong):
            top2 = model(wrong).softmax(dim=1).topk(2, dim=1).values
            margins.append(top2[:, 0] - top2[:, 1])
    print(confusions)
    if margins:
        print("mean margin on errors:", torch.cat(margins).mean().item())


if __name__ == "__main__":
    main()
