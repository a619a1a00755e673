"""Speech model resume: the model moves after the optimizer state is loaded, and the state follows it."""

import argparse
import os

import torch
from torch import nn


class Synthesizer(nn.Module):
    def __init__(self, n_mels=80):
        super().__init__()
        self.encoder = nn.GRU(n_mels, 128, batch_first=True)
        self.proj = nn.Linear(128, n_mels)

    def forward(self, mels):
        hidden, _ = self.encoder(mels)
        return self.proj(hidden)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--log-dir", default="runs/tts")
    parser.add_argument("--resume-epoch", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=50)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    model = Synthesizer()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    if args.resume_epoch:
        ckpt = torch.load(os.path.join(args.log_dir, f"epoch{args.resume_epoch}.pt"), map_location="cpu")
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])

    model = model.to(device)
    for slots in optimizer.state.values():
        for key, value in slots.items():
            if torch.is_tensor(value):
                slots[key] = value.to(device)

    loader = torch.utils.data.DataLoader(torch.randn(256, 40, 80), batch_size=16, shuffle=True)
    for epoch in range(args.resume_epoch, args.epochs):
        model.train()
        for mels in loader:
            mels = mels.to(device)
            optimizer.zero_grad()
            loss = nn.functional.l1_loss(model(mels), mels)
            loss.backward()
            optimizer.step()
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, f"epoch{epoch + 1}.pt")


if __name__ == "__main__":
    main()
