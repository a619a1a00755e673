"""Pre-1.1 style epoch loop: the LR scheduler is stepped at the start of each epoch."""
import torch
import torch.nn as nn


def run(model, train_loader, val_loader, epochs=90, device="cuda"):
    model = model.to(device)
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30, gamma=0.1)
    best = 0.0
    for epoch in range(epochs):
        scheduler.step()  # expect: TL015
        model.train()
        for images, target in train_loader:
            images, target = images.to(device), target.to(device)
            loss = criterion(model(images), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if epoch % 5 == 0:
            model.eval()
            with torch.no_grad():
                correct = sum((model(x.to(device)).argmax(1) == y.to(device)).sum().item() for x, y in val_loader)
            best = max(best, correct / len(val_loader.dataset))
        print(f"epoch {epoch}: lr {scheduler.get_last_lr()[0]:.4f} best {best:.4f}")
    return best
