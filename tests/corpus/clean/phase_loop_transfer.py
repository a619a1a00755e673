"""Transfer learning with a train/val phase loop and grad mode keyed on the phase."""
import copy
import time

import torch
import torch.nn as nn
from torchvision import models


def train_model(model, dataloaders, dataset_sizes, criterion, optimizer, scheduler, num_epochs=25, device="cuda"):
    since = time.time()
    best_wts = copy.deepcopy(model.state_dict())
    best_acc = 0.0
    for epoch in range(num_epochs):
        for phase in ["train", "val"]:
            if phase == "train":
                model.train()
            else:
                model.eval()
            running_loss, running_corrects = 0.0, 0
            for inputs, labels in dataloaders[phase]:
                inputs, labels = inputs.to(device), labels.to(device)
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == "train"):
                    outputs = model(inputs)
                    _, preds = torch.max(outputs, 1)
                    loss = criterion(outputs, labels)
                    if phase == "train":
                        loss.backward()
                        optimizer.step()
                running_loss += loss.item() * inputs.size(0)
                running_corrects += torch.sum(preds == labels.data)
            if phase == "train":
                scheduler.step()
            epoch_acc = running_corrects.double() / dataset_sizes[phase]
            print(f"{phase} loss {running_loss / dataset_sizes[phase]:.4f} acc {epoch_acc:.4f}")
            if phase == "val" and epoch_acc > best_acc:
                best_acc = epoch_acc
                best_wts = copy.deepcopy(model.state_dict())
    print(f"done in {time.time() - since:.0f}s, best val acc {best_acc:.4f}")
    model.load_state_dict(best_wts)
    return model


@torch.no_grad
def predict(model, loader, device="cuda"):
    model.train(False)
    return torch.cat([model(x.to(device)).argmax(1).cpu() for x, _ in loader])


def main(dataloaders, dataset_sizes, n_classes):
    model = models.resnet18(weights="IMAGENET1K_V1")
    model.fc = nn.Linear(model.fc.in_features, n_classes)
    model = model.to("cuda")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=7, gamma=0.1)
    model = train_model(model, dataloaders, dataset_sizes, nn.CrossEntropyLoss(), optimizer, scheduler)
    return predict(model, dataloaders["val"])
