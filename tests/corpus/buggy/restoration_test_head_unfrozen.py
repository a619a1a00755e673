"""Test a restoration network; only its encoder is frozen, the rest still records a graph."""

import torch

from nets import Restorer
from utils import load_pairs, psnr


def main(weights, test_dir):
    restorer = Restorer(n_blocks=16)
    restorer.load_state_dict(torch.load(weights), strict=True)
    restorer.eval()
    for weight in restorer.encoder.parameters():
        weight.requires_grad = False
    scores = []
    for degraded, reference in load_pairs(test_dir):
        restored = restorer(degraded)  # expect: TL006
        scores.append(psnr(restored.clamp(0, 1), reference).item())
    return sum(scores) / len(scores)
