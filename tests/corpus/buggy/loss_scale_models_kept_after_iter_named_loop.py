"""Fine-tuning with gradient checkpoints, written with an outer loop over training iterations and an
inner loop over data shards: the model and its optimizer are rebuilt for every shard, and the model
saved after the loops only ever saw the last shard."""
import torch
import torch.nn as nn


class Regressor(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, width), nn.Tanh(), nn.Linear(width, 1))

    def forward(self, x):
        return self.net(x)


def fit(shards, num_iters, width=64, path="regressor.pt"):
    for train_iter in range(num_iters):
        for shard in shards:
            model = Regressor(width)  # expect: TL003
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)  # expect: TL004
            for x, y in shard:
                optimizer.zero_grad()
                nn.functional.mse_loss(model(x), y).backward()
                optimizer.step()
    torch.save(model.state_dict(), path)
