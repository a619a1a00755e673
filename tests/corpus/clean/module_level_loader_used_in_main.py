"""Loaders defined at module level (cheap to rebuild on re-import), iterated only under the main guard."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, random_split
from torchvision import datasets, transforms

BATCH = 128
dataset = datasets.MNIST("data", train=True, download=True, transform=transforms.ToTensor())
train_set, val_set = random_split(dataset, [55000, 5000], generator=torch.Generator().manual_seed(0))
train_loader = DataLoader(train_set, batch_size=BATCH, shuffle=True, num_workers=4, persistent_workers=True)
val_loader = DataLoader(val_set, batch_size=1024, num_workers=2)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Dropout(0.2), nn.Linear(512, 10))

    def forward(self, x):
        return self.body(x)


def run(epochs=5):
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=1)
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val_loss = sum(nn.functional.cross_entropy(model(x), y, reduction="sum").item() for x, y in val_loader)
        scheduler.step(val_loss)
        print(f"epoch {epoch}: val loss {val_loss / len(val_set):.4f}")


if __name__ == "__main__":
    run()
