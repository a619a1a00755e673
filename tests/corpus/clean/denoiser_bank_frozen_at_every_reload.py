import torch
from torch import nn


class Denoiser(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.body = nn.Conv2d(channels, channels, 3, padding=1)
        self.head = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        return x - self.head(self.body(x))


def denoise_tiles(denoiser, image):
    return torch.cat([denoiser(tile) for tile in image.chunk(2, dim=-1)], dim=-1)


def evaluate(images, banks, device):
    denoiser = Denoiser(channels=3)
    active = -1
    restored = []
    for image, level in zip(images, range(len(banks))):
        if level != active:
            denoiser.load_state_dict(banks[level])
            denoiser.eval()
            for weight in denoiser.parameters():
                weight.requires_grad = False
            denoiser = denoiser.to(device)
            active = level
        restored.append(denoise_tiles(denoiser, image))
    return restored
