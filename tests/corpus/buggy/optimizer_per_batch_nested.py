"""Curriculum training whose optimizer is rebuilt for every batch of every stage."""
import torch
import torch.nn as nn


def stage_loader(dataset, difficulty, batch_size=64):
    subset = [s for s in dataset if s["difficulty"] <= difficulty]
    return torch.utils.data.DataLoader(subset, batch_size=batch_size, shuffle=True)


def train_curriculum(model, dataset, stages=(1, 2, 3), epochs_per_stage=5, lr=1e-3):
    criterion = nn.CrossEntropyLoss()
    for difficulty in stages:
        loader = stage_loader(dataset, difficulty)
        for epoch in range(epochs_per_stage):
            model.train()
            for batch in loader:
                optimizer = torch.optim.Adam(model.parameters(), lr=lr / difficulty)  # expect: TL004
                optimizer.zero_grad()
                loss = criterion(model(batch["x"]), batch["y"])
                loss.backward()
                optimizer.step()
            print(f"stage {difficulty} epoch {epoch}: loss {loss.item():.4f}")
    return model
