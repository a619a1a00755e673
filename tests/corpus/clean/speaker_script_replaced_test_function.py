"""A speaker-verification training script whose author replaced its evaluation: the first `test`
(autograd on) was superseded by a second `def test` pasted below it, under no-grad. Nothing reads
the name between the two, so every call runs the second one and the first never runs."""

import argparse

import torch
import torch.nn.functional as F
from torch.utils.tensorboard import SummaryWriter

parser = argparse.ArgumentParser(description="speaker verification")
parser.add_argument("--epochs", type=int, default=30)
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--feat-dim", type=int, default=64)
args = parser.parse_args()
writer = SummaryWriter("runs/sv")


def train(model, loader, optimizer, epoch):
    model.train()
    for feats, labels in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(feats), labels)
        loss.backward()
        optimizer.step()
    writer.add_scalar("Train/Loss", loss.item(), epoch)


def test(test_loader, model, epoch):
    # switch to evaluate mode
    model.eval()
    distances = []
    for data_a, data_p in test_loader:
        distances.append(F.pairwise_distance(model(data_a), model(data_p)))
    writer.add_scalar("Test/Distance", torch.cat(distances).mean().item(), epoch)


def test(test_loader, model, epoch):
    model.eval()
    distances = []
    with torch.no_grad():
        for data_a, data_p in test_loader:
            distances.append(F.pairwise_distance(model(data_a), model(data_p)))
    writer.add_scalar("Test/Distance", torch.cat(distances).mean().item(), epoch)


def main():
    print("Parsed options: {}".format(vars(args)))
    model = torch.nn.Sequential(
        torch.nn.Linear(args.feat_dim, 512), torch.nn.BatchNorm1d(512), torch.nn.ReLU(), torch.nn.Linear(512, 1211)
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    train_loader, test_loader = torch.load("sv_loaders.pt")
    for epoch in range(1, args.epochs + 1):
        train(model, train_loader, optimizer, epoch)
        test(test_loader, model, epoch)
    writer.close()


if __name__ == "__main__":
    main()
