"""CycleGAN-style training whose generators and encoder are named by letters (G_AB, Enc1) and built
from classes of another module: the validation sampler and the evaluation run them with autograd on."""
import itertools

import torch
from torchvision.utils import save_image

from models import Encoder, GeneratorResNet


def main(dataloader, val_dataloader, val_loader, criterion, device="cuda"):
    G_AB = GeneratorResNet((3, 256, 256), 9).to(device)
    G_BA = GeneratorResNet((3, 256, 256), 9).to(device)
    Enc1 = Encoder().to(device)
    optimizer_G = torch.optim.Adam(itertools.chain(G_AB.parameters(), G_BA.parameters()), lr=2e-4)
    optimizer_E = torch.optim.SGD(Enc1.parameters(), lr=0.1)

    def sample_images(batches_done):
        G_AB.eval()
        imgs = next(iter(val_dataloader))
        fake_B = G_AB(imgs["A"].to(device))  # expect: TL006
        save_image(fake_B, f"images/{batches_done}.png", normalize=True)
        G_AB.train()

    def evaluate():
        Enc1.eval()
        accuracy = sum((Enc1(x.to(device)).argmax(1) == y.to(device)).float().mean().item() for x, y in val_loader)  # expect: TL006
        Enc1.train()
        return accuracy / len(val_loader)

    for epoch in range(200):
        for i, batch in enumerate(dataloader):
            optimizer_G.zero_grad()
            real_A, real_B = batch["A"].to(device), batch["B"].to(device)
            loss_G = criterion(G_AB(real_A), real_B) + criterion(G_BA(real_B), real_A)
            loss_G.backward()
            optimizer_G.step()
            optimizer_E.zero_grad()
            criterion(Enc1(real_A), batch["label"].to(device)).backward()
            optimizer_E.step()
            if i % 100 == 0:
                sample_images(i)
        print(epoch, evaluate())
