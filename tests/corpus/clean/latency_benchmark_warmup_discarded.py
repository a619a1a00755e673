"""Latency of a pruned classifier: warm-up forwards whose outputs are thrown away, then a timed loop
under no_grad, on a batch of real images and on a random batch handed to the same helper."""

import argparse
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


class SmallNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU())
        self.head = nn.Linear(32, classes)

    def forward(self, x):
        return self.head(self.features(x).mean((2, 3)))


def evaluate_latency(model, example, repetitions=100):
    for _ in range(20):
        _ = model(example)
    timings = []
    with torch.no_grad():
        for _ in range(repetitions):
            start = time.perf_counter()
            _ = model(example)
            timings.append(time.perf_counter() - start)
    return 1000 * sum(timings) / repetitions


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    model = SmallNet()
    model.load_state_dict(torch.load(args.checkpoint, map_location="cpu"))
    print(f"random batch: {evaluate_latency(model, torch.rand(args.batch_size, 3, 32, 32)):.2f} ms")

    data = datasets.CIFAR10("data", train=False, download=True, transform=transforms.ToTensor())
    images, _ = next(iter(DataLoader(data, batch_size=args.batch_size)))
    model.eval()
    for _ in range(20):
        warm = model(images)
    with torch.no_grad():
        start = time.perf_counter()
        model(images)
    print(f"real batch: {1000 * (time.perf_counter() - start):.2f} ms")


if __name__ == "__main__":
    main()
