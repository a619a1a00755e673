"""Active learning: every round goes on training one classifier, drawn from a table of architectures, on the
labelled set grown by the previous round's most uncertain pool samples."""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, Subset


class ConvNet(nn.Module):
    def __init__(self, channels=32, classes=10):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, channels, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(channels, classes)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def wide_convnet(classes=10):
    model = ConvNet(channels=128, classes=classes)
    return model


ARCHITECTURES = {"conv": ConvNet, "wide": wide_convnet}


def uncertainty(model, loader, device):
    model.eval()
    scores = []
    with torch.no_grad():
        for x, _ in loader:
            probs = model(x.to(device)).softmax(-1)
            scores.append(-(probs * probs.clamp_min(1e-12).log()).sum(-1))
    return torch.cat(scores)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", default="conv", choices=sorted(ARCHITECTURES))
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--per-round", type=int, default=100)
    args = parser.parse_args()

    device = "cuda" if torch.cuda.is_available() else "cpu"
    dataset = torch.load("pool.pt")
    labelled, pool = list(range(args.per_round)), list(range(args.per_round, len(dataset)))
    model = ARCHITECTURES[args.arch](classes=10).to(device)
    while True:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)  # expect: TL004
        model.train()
        for x, y in DataLoader(Subset(dataset, labelled), batch_size=64, shuffle=True):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x.to(device)), y.to(device)).backward()
            optimizer.step()
        if len(labelled) >= args.budget:
            break
        scores = uncertainty(model, DataLoader(Subset(dataset, pool), batch_size=256), device)
        picked = set(scores.topk(args.per_round).indices.tolist())
        labelled += [pool[i] for i in picked]
        pool = [p for i, p in enumerate(pool) if i not in picked]
    torch.save(model.state_dict(), "final.pt")


if __name__ == "__main__":
    main()
