"""FixMatch-style semi-supervised training; `--use-ema` is off unless given, so by default the
trained network itself is evaluated and left in eval mode for the next epoch."""

import argparse
import copy

import torch
import torch.nn.functional as F
from torch import nn


class WeightAverage:
    def __init__(self, model, decay=0.999):
        self.ema = copy.deepcopy(model)
        self.ema.eval()
        self.decay = decay

    @torch.no_grad()
    def update(self, model):
        for avg, live in zip(self.ema.parameters(), model.parameters()):
            avg.mul_(self.decay).add_(live, alpha=1 - self.decay)


def build_net(num_classes):
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Dropout(0.3),
        nn.Linear(32, num_classes),
    )


def run_test(loader, net):
    net.eval()
    hits = total = 0
    with torch.no_grad():
        for images, targets in loader:
            hits += (net(images).argmax(1) == targets).sum().item()
            total += targets.numel()
    return hits / max(total, 1)


def train_loop(cfg, net, averager, optimizer, labeled, unlabeled, test_loader):
    net.train()
    for epoch in range(cfg.epochs):
        for (x, y), (weak, strong) in zip(labeled, unlabeled):
            logits = net(torch.cat([x, weak, strong]))
            sup, pw, ps = logits.split([len(x), len(weak), len(strong)])
            probs = pw.detach().softmax(-1)
            conf, pseudo = probs.max(-1)
            unsup = (F.cross_entropy(ps, pseudo, reduction="none") * (conf > cfg.threshold)).mean()
            loss = F.cross_entropy(sup, y) + cfg.lambda_u * unsup
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if cfg.use_ema:
                averager.update(net)

        if cfg.use_ema:
            eval_model = averager.ema
        else:
            eval_model = net
        acc = run_test(test_loader, eval_model)  # expect: TL007
        print(f"epoch {epoch}: top-1 {acc:.3f}")


def main():
    parser = argparse.ArgumentParser(description="FixMatch")
    parser.add_argument("--epochs", type=int, default=300)
    parser.add_argument("--threshold", type=float, default=0.95)
    parser.add_argument("--lambda-u", type=float, default=1.0)
    parser.add_argument("--use-ema", action="store_true", help="evaluate the EMA weights")
    parser.add_argument("--ema-decay", type=float, default=0.999)
    cfg = parser.parse_args()
    print(vars(cfg))

    net = build_net(10)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.03, momentum=0.9, nesterov=True)
    averager = WeightAverage(net, cfg.ema_decay) if cfg.use_ema else None
    labeled, unlabeled, test_loader = make_loaders(cfg)  # noqa: F821 (data helpers elsewhere)
    train_loop(cfg, net, averager, optimizer, labeled, unlabeled, test_loader)


if __name__ == "__main__":
    main()
