"""Test-time refinement: each scale optimises latent codes cut from the encoder's output."""

import torch
import torch.nn.functional as F


def refine_scale(encoder, decoder, image, reference, steps=20, lr=2e-3):
    with torch.no_grad():
        coarse, fine = encoder(image)
    coarse, fine = coarse.detach().to(image.device), fine.detach().to(image.device)
    coarse.requires_grad, fine.requires_grad = True, True
    optimizer = torch.optim.Adam([coarse, fine], lr=lr)
    for _ in range(steps):
        optimizer.zero_grad()
        prediction = decoder((coarse, fine))
        loss = F.l1_loss(F.interpolate(prediction, size=reference.shape[-2:]), reference)
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        return decoder((coarse, fine))


def refine(encoder, decoder, pyramid):
    result = None
    for image in pyramid:
        reference = image if result is None else result
        result = refine_scale(encoder, decoder, image, reference)
    return result
