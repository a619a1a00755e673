"""Smoke tests of a sequence model, and an epoch function whose grad switch leaves validation on."""

import pytest
import torch
from seqlib import SeqDecoder, SeqEncoder


@pytest.mark.parametrize("depth", (2, 3))
def test_encoder_runs(depth):
    encoder = SeqEncoder(width=32, depth=depth)
    tokens = torch.randint(0, 50, (2, 12))
    pad = torch.randint(0, 2, (2, 12)).bool()
    encoder(tokens, mask=pad)


def test_decoder_after_moves(config):
    decoder = SeqDecoder(config).half()
    ids = torch.tensor([[3, 8, 1]])
    keep = torch.tensor([[1, 1, 1]]).bool()
    _ = decoder(ids, attention_mask=keep)
    decoder = decoder.float()
    _ = decoder(ids.long(), attention_mask=keep.clone())


def test_rejects_empty_batch(trained_decoder, val_batch):
    with pytest.raises(ValueError):
        trained_decoder(val_batch[:0])


def run_epoch(model, optimizer, loader, phase):
    torch.set_grad_enabled(phase != "test")
    model.train(phase == "train")
    total = 0.0
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)  # expect: TL006
        if phase == "train":
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        total += loss.item()
    torch.set_grad_enabled(True)
    return total / len(loader)


def fit(model, optimizer, train_loader, val_loader, epochs):
    for _ in range(epochs):
        run_epoch(model, optimizer, train_loader, "train")
        print(run_epoch(model, optimizer, val_loader, "val"))
