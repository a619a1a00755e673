"""Course notebook cells exported to a script (the bare expressions are what each cell displayed):
a worker DataLoader at top level is normal in a notebook, whose kernel never re-imports its cells."""
import os

import torch
from torch import nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

torch.__version__

device = "cuda" if torch.cuda.is_available() else "cpu"
device

data_transform = transforms.Compose([transforms.Resize((64, 64)), transforms.ToTensor()])
train_data = datasets.ImageFolder("data/pizza_steak_sushi/train", transform=data_transform)
test_data = datasets.ImageFolder("data/pizza_steak_sushi/test", transform=data_transform)
class_names = train_data.classes
class_names

NUM_WORKERS = os.cpu_count()
train_dataloader = DataLoader(train_data, batch_size=32, shuffle=True, num_workers=NUM_WORKERS)
test_dataloader = DataLoader(test_data, batch_size=32, shuffle=False, num_workers=NUM_WORKERS)
train_dataloader, test_dataloader

img, label = next(iter(train_dataloader))
img.shape, label.shape

model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 64 * 64, 128), nn.ReLU(), nn.Linear(128, len(class_names))).to(device)
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(5):
    model.train()
    train_loss = 0.0
    for X, y in train_dataloader:
        X, y = X.to(device), y.to(device)
        loss = loss_fn(model(X), y)
        train_loss += loss.item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.inference_mode():
        test_acc = sum((model(X.to(device)).argmax(1) == y.to(device)).float().mean().item() for X, y in test_dataloader)
    print(f"epoch {epoch}: train loss {train_loss / len(train_dataloader):.4f} | test acc {test_acc / len(test_dataloader):.4f}")
