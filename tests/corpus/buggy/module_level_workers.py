"""A notebook-turned-script: worker DataLoader built and iterated at module level."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
train_set = datasets.FashionMNIST("data", train=True, download=True, transform=tf)
train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=4)  # expect: TL019

model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
criterion = nn.CrossEntropyLoss()

for epoch in range(5):
    model.train()
    for x, y in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: last loss {loss.item():.3f}")

torch.save(model.state_dict(), "fmnist.pt")
