"""Transfer-learning tutorial: time a few training batches on each device, with a fresh optimizer
per device (each pass is its own measurement), then train for real with one optimizer."""
import time

import torch
from torch import nn, optim
from torchvision import models


def build_model():
    model = models.densenet121(weights="DEFAULT")
    for param in model.parameters():
        param.requires_grad = False
    model.classifier = nn.Sequential(nn.Linear(1024, 256), nn.ReLU(), nn.Dropout(0.2), nn.Linear(256, 2), nn.LogSoftmax(dim=1))
    return model


def time_devices(model, trainloader):
    criterion = nn.NLLLoss()
    for device in ["cpu", "cuda"]:
        optimizer = optim.Adam(model.classifier.parameters(), lr=0.003)
        model.to(device)
        for ii, (inputs, labels) in enumerate(trainloader):
            inputs, labels = inputs.to(device), labels.to(device)
            start = time.time()
            optimizer.zero_grad()
            criterion(model(inputs), labels).backward()
            optimizer.step()
            if ii == 3:
                break
        print(f"Device = {device}; Time per batch: {(time.time() - start) / 3:.3f} seconds")


def train(model, trainloader, epochs=1, device="cuda"):
    criterion = nn.NLLLoss()
    model.to(device)
    optimizer = optim.Adam(model.classifier.parameters(), lr=0.003)
    for epoch in range(epochs):
        model.train()
        for inputs, labels in trainloader:
            inputs, labels = inputs.to(device), labels.to(device)
            optimizer.zero_grad()
            criterion(model(inputs), labels).backward()
            optimizer.step()
