"""Scores a trained source-separation model; autograd is switched off by entering no_grad by hand."""

import torch
from separation import SeparationDataset, SeparationModel, pit_loss


def main(conf):
    model = SeparationModel.from_pretrained(conf["checkpoint"])
    model.eval()
    device = next(model.parameters()).device
    test_set = SeparationDataset(conf["test_dir"], segment=None)
    scores = []
    no_grad = torch.no_grad()
    no_grad.__enter__()
    for idx in range(len(test_set)):
        mixture, sources = test_set[idx]
        estimate = model(mixture[None].to(device))
        loss = pit_loss(estimate, sources[None].to(device))
        scores.append(loss.item())
    print(sum(scores) / len(scores))


if __name__ == "__main__":
    main({"checkpoint": "best.pth", "test_dir": "data/test"})
