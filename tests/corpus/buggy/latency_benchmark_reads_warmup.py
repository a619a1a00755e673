"""Latency and agreement of a pruned classifier: the last warm-up output is compared against the
labels, so the warm-up is an evaluation, run with autograd on and in training mode."""

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


def evaluate_latency(model, images, labels, repetitions=100):
    for _ in range(20):
        logits = model(images)  # expect: TL005, TL006
    accuracy = (logits.argmax(1) == labels).float().mean().item()
    timings = []
    with torch.no_grad():
        for _ in range(repetitions):
            start = time.perf_counter()
            _ = model(images)
            timings.append(time.perf_counter() - start)
    return 1000 * sum(timings) / repetitions, accuracy


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint", required=True)
    args = parser.parse_args()

    model = SmallNet()
    model.load_state_dict(torch.load(args.checkpoint, map_location="cpu"))
    data = datasets.CIFAR10("data", train=False, download=True, transform=transforms.ToTensor())
    images, labels = next(iter(DataLoader(data, batch_size=64)))
    latency, accuracy = evaluate_latency(model, images, labels)
    print(f"{latency:.2f} ms, accuracy {accuracy:.3f}")


if __name__ == "__main__":
    main()
