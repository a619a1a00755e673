"""A text classifier script with several step-ordering and device mistakes."""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader


class BiLSTM(nn.Module):
    def __init__(self, vocab, dim=128, n_classes=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim, padding_idx=0)
        self.lstm = nn.LSTM(dim, dim, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * dim, n_classes)

    def forward(self, tokens):
        h, _ = self.lstm(self.emb(tokens))
        return self.out(h.mean(1))


def setup():
    dist.init_process_group("gloo" if not torch.cuda.is_available() else "nccl")
    return int(os.environ.get("LOCAL_RANK", 0))


def train(args, dataset):
    rank = setup()
    device = torch.device("cuda", rank)
    model = BiLSTM(args.vocab)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    if args.resume:
        state = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
    model = model.to(device)  # expect: TL017
    model = DDP(model, device_ids=[rank])
    warmup = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=500)
    loader = DataLoader(dataset, batch_size=args.batch_size)  # expect: TL021
    criterion = nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        model.train()
        for tokens, labels in loader:
            tokens, labels = tokens.to(device), labels.to(device)
            warmup.step()  # expect: TL015
            optimizer.zero_grad()
            logits = model(tokens)
            probs = logits.softmax(-1)
            loss = criterion(probs, labels)  # expect: TL012
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--vocab", type=int, default=30000)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=5)
    train(parser.parse_args(), torch.load("train.pt"))
