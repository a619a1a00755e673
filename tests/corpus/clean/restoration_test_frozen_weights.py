"""Test a restoration network on a folder of degraded images; its weights are frozen after loading."""

import argparse

import torch

from nets import Restorer
from utils import load_pairs, psnr


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--weights", required=True)
    parser.add_argument("--test-dir", default="set5")
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    restorer = Restorer(n_blocks=16)
    restorer.load_state_dict(torch.load(args.weights), strict=True)
    restorer.eval()
    for _, weight in restorer.named_parameters():
        weight.requires_grad = False
    restorer = restorer.to(device)

    scores = []
    for degraded, reference in load_pairs(args.test_dir):
        restored = restorer(degraded.to(device))
        scores.append(psnr(restored.clamp(0, 1), reference.to(device)).item())
    print(f"{args.test_dir}: {sum(scores) / len(scores):.2f} dB")


if __name__ == "__main__":
    main()
