"""Unit tests of the library's weight-quantizing wrapper: a shared helper compares it with manual rounding on
random weights and random inputs."""

import copy

import pytest
import torch
from torch import nn

from quantkit.wrappers import RoundedWeights


def _test_matches_manual_rounding(layer, inputs, bits):
    layer.weight.data = torch.rand_like(layer.weight)
    wrapped = RoundedWeights(copy.deepcopy(layer), bits=bits)
    wrapped.eval()
    reference = copy.deepcopy(layer)
    scale = reference.weight.data.abs().max() / (2 ** (bits - 1) - 1)
    reference.weight.data = torch.round(reference.weight.data / scale) * scale
    out = wrapped(inputs)
    assert torch.equal(out, reference(inputs))


@pytest.mark.parametrize("bits", [4, 8])
def test_linear(bits):
    torch.manual_seed(0)
    layer = nn.Linear(20, 6)
    x = torch.rand(3, 20)
    _test_matches_manual_rounding(layer, x, bits)


@pytest.mark.parametrize("bits", [4, 8])
def test_conv(bits):
    images = torch.randn(2, 3, 8, 8)
    conv = nn.Conv2d(3, 5, 3)
    _test_matches_manual_rounding(conv, images, bits)
