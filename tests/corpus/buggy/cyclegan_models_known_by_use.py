"""A CycleGAN-style script whose networks come from a sibling module and have short names
(G_AB, G_BA, D_B): they are models because their parameters feed the optimizer. The validation
helper receives the generator as `gen` and runs it with autograd on (TL006). It also runs it in
training mode, but what GeneratorResNet is built of lives in the sibling module, which this file
alone does not show: TL005 speaks only of models shown to depend on the mode."""
import itertools

import torch

from models import Discriminator, GeneratorResNet


def evaluate(gen, loader):
    """Translated images of the validation set."""
    samples = []
    for real in loader:
        samples.append(gen(real).cpu())  # expect: TL006
    return samples


def main(opt, train_loader, val_loader):
    G_AB = GeneratorResNet(3, opt.n_residual_blocks)
    G_BA = GeneratorResNet(3, opt.n_residual_blocks)
    D_B = Discriminator(3)
    mse = torch.nn.MSELoss()
    l1 = torch.nn.L1Loss()
    optimizer_G = torch.optim.Adam(itertools.chain(G_AB.parameters(), G_BA.parameters()), lr=opt.lr)
    for epoch in range(opt.n_epochs):
        for real_A, real_B in train_loader:
            optimizer_G.zero_grad()
            fake_B = G_AB(real_A)
            loss_G = mse(D_B(fake_B), torch.ones_like(D_B(fake_B))) + l1(G_BA(fake_B), real_A)
            loss_G.backward()
            optimizer_G.step()
        evaluate(G_AB, val_loader)
