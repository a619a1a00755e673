"""Test script for a temporal action detector: only the backbone is frozen, so the
head still records a graph at every test batch."""

import argparse

import torch
import torch.nn as nn
from detection.models import ClipDetector
from detection.data import clip_loader


def run_test(detector, loader, threshold):
    detector.eval()
    kept = []
    for clips, meta in loader:
        scores, segments = detector(clips.cuda())  # expect: TL006
        keep = scores.max(dim=-1).values > threshold
        kept.append((segments[keep].cpu(), meta))
    return kept


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--gpus", type=int, nargs="+", default=[0])
    parser.add_argument("--threshold", type=float, default=0.5)
    args = parser.parse_args()

    detector = ClipDetector(depth=18)
    for _, weight in detector.backbone.named_parameters():
        weight.requires_grad = False
    checkpoint = torch.load(args.checkpoint, map_location="cpu")
    detector.load_state_dict(checkpoint["model"])
    if torch.cuda.is_available():
        detector = detector.cuda()
        detector = nn.parallel.DataParallel(detector, device_ids=args.gpus)
    detections = run_test(detector, clip_loader("val"), args.threshold)
    torch.save(detections, "detections.pt")


if __name__ == "__main__":
    main()
