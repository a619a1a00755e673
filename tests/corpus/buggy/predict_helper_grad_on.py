"""A training function handed its model; its per-epoch prediction helper keeps autograd on."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class TemporalConvNet(nn.Module):
    def __init__(self, channels=(1, 32, 32, 32), kernel=3, horizon=12):
        super().__init__()
        layers = []
        for i, (c_in, c_out) in enumerate(zip(channels[:-1], channels[1:])):
            layers += [nn.Conv1d(c_in, c_out, kernel, padding=(kernel - 1) * 2 ** i, dilation=2 ** i), nn.ReLU()]
        self.tcn = nn.Sequential(*layers)
        self.head = nn.Linear(channels[-1], horizon)

    def forward(self, x):
        return self.head(self.tcn(x)[..., -1])


def forecast(model, loader):
    model.eval()
    outputs = []
    for window, _ in loader:
        outputs.append(model(window).cpu())  # expect: TL006
    return torch.cat(outputs)


def train(model, train_loader, holdout_loader, epochs=20, lr=1e-3):
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    for epoch in range(epochs):
        model.train()
        for window, target in train_loader:
            optimizer.zero_grad()
            F.mse_loss(model(window), target).backward()
            optimizer.step()
        pred = forecast(model, holdout_loader)
        truth = torch.cat([t for _, t in holdout_loader])
        print(f"epoch {epoch}: holdout MAE {(pred - truth).abs().mean().item():.4f}")
    return model


if __name__ == "__main__":
    series = torch.randn(1000, 1, 48)
    targets = torch.randn(1000, 12)
    data = torch.utils.data.TensorDataset(series, targets)
    train(TemporalConvNet(), torch.utils.data.DataLoader(data, batch_size=32, shuffle=True),
          torch.utils.data.DataLoader(data, batch_size=256))
