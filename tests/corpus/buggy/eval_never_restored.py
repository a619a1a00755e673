"""The trainer switches to eval for validation and never back: epochs 2+ train in eval mode."""
import torch
import torch.nn.functional as F


class Runner:
    def __init__(self, model, optimizer, train_loader, val_loader):
        self.model = model
        self.optimizer = optimizer
        self.train_loader = train_loader
        self.val_loader = val_loader

    @torch.no_grad()
    def evaluate(self):
        self.model.eval()
        hits = sum((self.model(x).argmax(1) == y).sum().item() for x, y in self.val_loader)
        return hits / len(self.val_loader.dataset)

    def run(self, epochs):
        self.model.train()
        for epoch in range(epochs):
            for x, y in self.train_loader:
                self.optimizer.zero_grad()
                F.cross_entropy(self.model(x), y).backward()
                self.optimizer.step()
            acc = self.evaluate()  # expect: TL007
            print(f"epoch {epoch}: acc {acc:.3f}")


if __name__ == "__main__":
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 256), torch.nn.Dropout(0.3), torch.nn.Linear(256, 10))
    Runner(net, torch.optim.Adam(net.parameters()), train_loader, val_loader).run(20)
