"""A train/val phase loop (the classic fine-tuning tutorial shape) that builds its optimizer and
scheduler inside the phase loop: momentum and the LR schedule restart every epoch."""
import copy

import torch


def train_model(model, dataloaders, dataset_sizes, criterion, num_epochs=25, device="cuda"):
    best_wts, best_acc = copy.deepcopy(model.state_dict()), 0.0
    for epoch in range(num_epochs):
        for phase in ["train", "val"]:
            optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)  # expect: TL004
            scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=7, gamma=0.1)
            model.train(phase == "train")
            running_corrects = 0
            for inputs, labels in dataloaders[phase]:
                inputs, labels = inputs.to(device), labels.to(device)
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == "train"):
                    outputs = model(inputs)
                    loss = criterion(outputs, labels)
                    if phase == "train":
                        loss.backward()
                        optimizer.step()
                running_corrects += (outputs.argmax(1) == labels).sum().item()
            if phase == "train":
                scheduler.step()
            acc = running_corrects / dataset_sizes[phase]
            if phase == "val" and acc > best_acc:
                best_acc, best_wts = acc, copy.deepcopy(model.state_dict())
    model.load_state_dict(best_wts)
    return model
