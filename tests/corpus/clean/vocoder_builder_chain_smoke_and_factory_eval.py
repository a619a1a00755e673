"""Unit tests of a small vocoder: the model comes from a helper that calls the package-style
builder, which only constructs it; the tests run it untrained on a random spectrogram and encoded
text and look at the shapes. The evaluation entry point gets a model *constructor* from a registry,
builds the model with it (moved to the GPU) and scores it under no_grad."""

import torch
from torch import nn

from registry import constructor_for


class Vocoder(nn.Module):
    def __init__(self, vocab, mels=80, channels=32):
        super().__init__()
        self.embed = nn.Embedding(vocab, channels)
        self.to_mel = nn.Linear(channels, mels)

    def forward(self, tokens, spectrogram):
        return self.to_mel(self.embed(tokens)) + spectrogram.mean(dim=1, keepdim=True)


def vocoder(vocab, mels=80, channels=32):
    net = Vocoder(vocab, mels=mels, channels=channels)
    return net


def _small_model(channels=8):
    model = vocoder(vocab=30, channels=channels)
    return model


def _encode(text):
    return [ord(ch) % 30 for ch in text]


def test_vocoder_output_shape():
    tokens = torch.LongTensor([_encode("a short one"), _encode("and another")])
    spectrogram = torch.rand(2, 11, 80)
    for width in (8, 16):
        model = _small_model(channels=width)
        mel = model(tokens, spectrogram)
        print("mel:", mel.size())


def run_scoring(net, batches):
    with torch.no_grad():
        return sum((net(x).argmax(1) == y).float().mean().item() for x, y in batches) / len(batches)


def evaluate_checkpoint(cfg, batches, build=None):
    if build is None:
        build = constructor_for(cfg.arch)
    model = build(cfg).cuda()
    model.load_state_dict(torch.load(cfg.weights))
    model.eval()
    return run_scoring(model, batches)
