"""The same script with the switch set to train: the training branch builds a loader with
workers on import."""

import torch
from torch.utils.data import DataLoader

from detector import Darknet, VOCDataset

model = Darknet("cfg/yolo.cfg")
model.load_weights("weights/yolo.weights")
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
test_loader = DataLoader(VOCDataset("test.txt"), batch_size=32, num_workers=0)


def train(epoch):
    train_loader = DataLoader(VOCDataset("train.txt"), batch_size=32, shuffle=True, num_workers=8)  # expect: TL019
    model.train()
    for images, targets in train_loader:
        optimizer.zero_grad()
        model.loss(model(images), targets).backward()
        optimizer.step()


@torch.no_grad()
def test(epoch):
    model.eval()
    hits = 0
    for images, targets in test_loader:
        hits += model.match(model(images), targets)
    print(epoch, hits / len(test_loader.dataset))


evaluate = False
if evaluate:
    test(0)
else:
    for epoch in range(100):
        train(epoch)
        test(epoch)
