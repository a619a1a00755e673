"""Next-step prediction on sensor sequences; the held-out test reloads the best checkpoint."""

import argparse

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--context", type=int, default=12)
parser.add_argument("--epochs", type=int, default=20)
args = parser.parse_args()

device = "cuda" if torch.cuda.is_available() else "cpu"
encoder = nn.LSTM(6, 64, batch_first=True).to(device)
readout = nn.Linear(64, 6).to(device)
optimizer = torch.optim.Adam([*encoder.parameters(), *readout.parameters()], lr=3e-4)
train_loader = torch.utils.data.DataLoader(torch.load("sensors_train.pt"), batch_size=64, shuffle=True)
test_loader = torch.utils.data.DataLoader(torch.load("sensors_test.pt"), batch_size=64)


def forecast(window):
    hidden, _ = encoder(window)
    return readout(hidden)


def fit_epoch():
    encoder.train()
    for sequences, _ in train_loader:
        sequences = sequences.to(device)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(forecast(sequences[:, :-1]), sequences[:, 1:])
        loss.backward()
        optimizer.step()
    return loss.item()


def test():
    encoder.eval()
    encoder.load_state_dict(torch.load("best_encoder.pt"))
    readout.load_state_dict(torch.load("best_readout.pt"))
    total, batches = 0.0, 0
    for index, (sequences, sensor_ids) in enumerate(test_loader):
        sequences = sequences.to(device)
        assert sequences.size(1) - args.context > args.context, "sequence shorter than two windows"
        hidden, _ = encoder(sequences[:, : args.context])  # expect: TL006
        prediction = readout(hidden[:, -1])
        total += nn.functional.mse_loss(prediction, sequences[:, args.context]).item()
        batches += 1
    print(f"test mse {total / batches:.5f}")


best = float("inf")
for epoch in range(args.epochs):
    last = fit_epoch()
    if last < best:
        best = last
        torch.save(encoder.state_dict(), "best_encoder.pt")
        torch.save(readout.state_dict(), "best_readout.pt")
test()
