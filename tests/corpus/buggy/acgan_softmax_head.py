"""An auxiliary-classifier GAN whose discriminator ends its class head with a softmax, then feeds
that head's output (the second item its forward returns) to cross-entropy."""
import torch
import torch.nn as nn


class Discriminator(nn.Module):
    def __init__(self, n_classes=10, img_size=32):
        super().__init__()
        self.conv_blocks = nn.Sequential(
            nn.Conv2d(3, 16, 3, 2, 1), nn.LeakyReLU(0.2, inplace=True), nn.Dropout2d(0.25),
            nn.Conv2d(16, 32, 3, 2, 1), nn.BatchNorm2d(32, 0.8), nn.LeakyReLU(0.2, inplace=True),
        )
        ds_size = img_size // 4
        self.adv_layer = nn.Sequential(nn.Linear(32 * ds_size**2, 1), nn.Sigmoid())
        self.aux_layer = nn.Sequential(nn.Linear(32 * ds_size**2, n_classes), nn.Softmax(dim=1))

    def forward(self, img):
        out = self.conv_blocks(img).flatten(1)
        return self.adv_layer(out), self.aux_layer(out)


def train(discriminator, dataloader, epochs=200):
    adversarial_loss = nn.BCELoss()
    auxiliary_loss = nn.CrossEntropyLoss()
    optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    for epoch in range(epochs):
        for imgs, labels in dataloader:
            valid = torch.ones(imgs.size(0), 1)
            optimizer_D.zero_grad()
            real_pred, real_aux = discriminator(imgs)
            d_loss = adversarial_loss(real_pred, valid) + auxiliary_loss(real_aux, labels)  # expect: TL012
            d_loss.backward()
            optimizer_D.step()
