"""Scores a trained source-separation model, but leaves the hand-entered no_grad before the loop."""

import torch
from separation import SeparationDataset, SeparationModel, pit_loss


def main(conf):
    model = SeparationModel.from_pretrained(conf["checkpoint"])
    model.eval()
    no_grad = torch.no_grad()
    no_grad.__enter__()
    device = next(model.parameters()).device
    test_set = SeparationDataset(conf["test_dir"], segment=None)
    no_grad.__exit__(None, None, None)
    scores = []
    for idx in range(len(test_set)):
        mixture, sources = test_set[idx]
        estimate = model(mixture[None].to(device))  # expect: TL006
        loss = pit_loss(estimate, sources[None].to(device))
        scores.append(loss.item())
    print(sum(scores) / len(scores))


if __name__ == "__main__":
    main({"checkpoint": "best.pth", "test_dir": "data/test"})
