"""An energy model that predicts by gradient steps on its guess, and a meta-learner whose query
forward ties autograd to the model's mode."""

import torch
from torch import nn
from torch.nn import functional as F


class Energy(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.head = nn.Sequential(nn.Linear(784 + classes, 128), nn.Softplus(), nn.Linear(128, 1))

    def forward(self, x, y):
        return self.head(torch.cat([x.flatten(1), y], dim=1)).squeeze(1)


class GradientRefiner(nn.Module):
    def __init__(self, energy, classes=10, steps=4, lr=0.1):
        super().__init__()
        self.energy, self.classes, self.steps, self.lr = energy, classes, steps, lr

    def forward(self, x):
        y = torch.zeros(x.size(0), self.classes, device=x.device, requires_grad=True)
        for _ in range(self.steps):
            (g,) = torch.autograd.grad(self.energy(x, y).sum(), y, create_graph=True)
            y = y - self.lr * g
        return y


def test(model, loader):
    model.eval()
    hits = 0
    for x, target in loader:
        hits += model(x).argmax(1).eq(target).sum().item()
    return hits / len(loader.dataset)


class MetaLearner:
    def __init__(self, model, optimizer, inner_lr=0.4):
        self.model, self.optimizer, self.inner_lr = model, optimizer, inner_lr

    def adapt(self, inputs, targets):
        params = dict(self.model.named_parameters())
        loss = F.cross_entropy(self.model(inputs, params=params), targets)
        grads = torch.autograd.grad(loss, list(params.values()), create_graph=self.model.training)
        return {name: p - self.inner_lr * g for (name, p), g in zip(params.items(), grads)}

    def outer_loss(self, batch):
        total, accuracies = 0.0, []
        for x_s, y_s, x_q, y_q in zip(*batch["train"], *batch["test"]):
            fast = self.adapt(x_s, y_s)
            with torch.set_grad_enabled(self.model.training):
                logits = self.model(x_q, params=fast)
                total = total + F.cross_entropy(logits, y_q)
            accuracies.append(logits.argmax(1).eq(y_q).float().mean().item())
        return total, sum(accuracies) / len(accuracies)

    def train_epoch(self, loader):
        self.model.train()
        for batch in loader:
            self.optimizer.zero_grad()
            loss, _ = self.outer_loss(batch)
            loss.backward()
            self.optimizer.step()

    def evaluate(self, loader):
        self.model.eval()
        return [self.outer_loss(batch)[1] for batch in loader]


def main(train_loader, test_loader, meta_model, meta_train, meta_val):
    model = GradientRefiner(Energy()).to("cuda")
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(5):
        model.train()
        for x, target in train_loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x), target).backward()
            optimizer.step()
        print(test(model, test_loader))
    learner = MetaLearner(meta_model, torch.optim.Adam(meta_model.parameters()))
    learner.train_epoch(meta_train)
    print(learner.evaluate(meta_val))


if __name__ == "__main__":
    main(*torch.load("loaders.pt"))
