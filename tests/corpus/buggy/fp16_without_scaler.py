"""Mixed precision with float16 autocast but no GradScaler."""
import torch
import torch.nn as nn


def train(model, loader, epochs=5, device="cuda"):
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    criterion = nn.MSELoss()
    for epoch in range(epochs):
        model.train()
        for batch, target in loader:
            batch, target = batch.to(device), target.to(device)
            optimizer.zero_grad()
            with torch.autocast(device_type="cuda", dtype=torch.float16):
                pred = model(batch)
                loss = criterion(pred, target)
            loss.backward()  # expect: TL018
            optimizer.step()
        print(epoch, loss.item())
