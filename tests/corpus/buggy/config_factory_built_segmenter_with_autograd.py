"""Evaluate a point-cloud segmenter that a config object builds; the forward forgets no-grad."""

import torch


def evaluate(cfg, loader, checkpoint_path):
    segmenter = cfg.network()
    if cfg.device == "cuda":
        segmenter = torch.nn.DataParallel(segmenter)
    segmenter = segmenter.to(cfg.device)
    segmenter.load_state_dict(torch.load(checkpoint_path)["weights"])
    segmenter.eval()
    hits = total = 0
    for points, labels in loader:
        predicted = segmenter(points.to(cfg.device)).argmax(1)  # expect: TL006
        hits += (predicted == labels.to(cfg.device)).sum().item()
        total += labels.numel()
    return hits / max(total, 1)
