"""5-fold cross-validation of a tabular MLP: a fresh model and optimizer per fold."""
import numpy as np
import torch
import torch.nn as nn
from sklearn.model_selection import StratifiedKFold
from torch.utils.data import DataLoader, Subset, TensorDataset


def make_model(n_features, n_classes):
    return nn.Sequential(
        nn.Linear(n_features, 256), nn.BatchNorm1d(256), nn.ReLU(), nn.Dropout(0.3),
        nn.Linear(256, n_classes),
    )


@torch.inference_mode()
def accuracy(model, loader):
    model.eval()
    correct = total = 0
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum().item()
        total += y.numel()
    return correct / total


def cross_validate(X, y, folds=5, epochs=30, lr=1e-3):
    dataset = TensorDataset(torch.as_tensor(X, dtype=torch.float32), torch.as_tensor(y))
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=0)
    scores = []
    for fold, (train_idx, val_idx) in enumerate(splitter.split(X, y)):
        train_loader = DataLoader(Subset(dataset, train_idx), batch_size=64, shuffle=True)
        val_loader = DataLoader(Subset(dataset, val_idx), batch_size=256)
        model = make_model(X.shape[1], int(y.max()) + 1)
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
        criterion = nn.CrossEntropyLoss(label_smoothing=0.05)
        for epoch in range(epochs):
            model.train()
            for xb, yb in train_loader:
                optimizer.zero_grad(set_to_none=True)
                loss = criterion(model(xb), yb)
                loss.backward()
                optimizer.step()
        score = accuracy(model, val_loader)
        print(f"fold {fold}: accuracy {score:.4f}")
        scores.append(score)
    return float(np.mean(scores)), float(np.std(scores))


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 20))
    y = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
    print(cross_validate(X, y))
