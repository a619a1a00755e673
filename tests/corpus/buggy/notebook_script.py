"""A notebook exported as a script: loaders from a helper, iterated at module level; eval without eval()."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def make_loader(train, workers=8):
    ds = datasets.CIFAR10("data", train=train, download=True, transform=transforms.ToTensor())
    return DataLoader(ds, batch_size=256, shuffle=train, num_workers=workers)  # expect: TL019


train_loader = make_loader(True)
test_loader = make_loader(False)
model = nn.Sequential(nn.Conv2d(3, 32, 3), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                      nn.Flatten(), nn.Dropout(0.3), nn.Linear(32, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

for epoch in range(3):
    model.train()
    for x, y in train_loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

correct = 0
with torch.no_grad():
    for x, y in test_loader:
        correct += (model(x).argmax(1) == y).sum().item()  # expect: TL005
print("accuracy", correct / len(test_loader.dataset))
