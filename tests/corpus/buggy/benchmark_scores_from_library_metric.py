"""Score a folder of restored images with a checkpointed quality network from an installed package."""

import argparse
import csv

import torch
from perceptual_metrics import load_metric
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--metric", default="sharpness")
    parser.add_argument("--images", required=True)
    parser.add_argument("--out", default="scores.csv")
    parser.add_argument("--weights", required=True)
    return parser.parse_args()


def main():
    args = parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    metric_model = load_metric(args.metric, device=device)
    metric_model.load_state_dict(torch.load(args.weights, map_location=device))
    dataset = datasets.ImageFolder(args.images, transform=transforms.ToTensor())
    test_loader = DataLoader(dataset, batch_size=16, num_workers=0)
    rows = []
    for images, labels in test_loader:
        scores = metric_model(images.to(device))  # expect: TL006
        rows.extend(zip(labels.tolist(), scores.flatten().tolist()))
    with open(args.out, "w", newline="") as handle:
        csv.writer(handle).writerows(rows)


if __name__ == "__main__":
    main()
