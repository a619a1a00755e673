"""Training over a dataset split in shards that do not fit in memory together: one model and
one optimizer for the whole run, the shards streamed in every epoch."""
import glob

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class MLP(nn.Module):
    def __init__(self, d_in, hidden, classes):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Dropout(0.1), nn.Linear(hidden, classes))

    def forward(self, x):
        return self.net(x)


def load_shard(path):
    blob = torch.load(path)
    return DataLoader(TensorDataset(blob["x"], blob["y"]), batch_size=512, shuffle=True)


def train(data_dir, epochs=5, lr=1e-3):
    shard_paths = sorted(glob.glob(f"{data_dir}/shard_*.pt"))
    model = MLP(1024, 512, 100)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    for epoch in range(epochs):
        for shard_id, path in enumerate(shard_paths):
            model.train()
            for x, y in load_shard(path):
                optimizer.zero_grad(set_to_none=True)
                loss = nn.functional.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()
            print(f"epoch {epoch} shard {shard_id}: {loss.item():.4f}")
    return model
