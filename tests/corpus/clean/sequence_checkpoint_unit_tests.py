"""Unit tests of the forecaster's checkpointing: a restored model computes what the saved one did."""

import torch
from torch import nn


def make_forecaster():
    return nn.Sequential(nn.Linear(12, 32), nn.Tanh(), nn.Linear(32, 6))


def sensor_batches(count=3):
    windows = torch.randn(count * 4, 12)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(windows), batch_size=4)


def test_restored_forecaster_matches(tmp_path):
    original = make_forecaster()
    torch.save(original.state_dict(), tmp_path / "forecaster.pt")
    restored = make_forecaster()
    restored.load_state_dict(torch.load(tmp_path / "forecaster.pt"))
    for (window,) in sensor_batches():
        assert window.size(1) == 12
        assert torch.allclose(restored(window), original(window))


def test_restored_forecaster_shape(tmp_path, horizon=6):
    original = make_forecaster()
    torch.save(original.state_dict(), tmp_path / "forecaster.pt")
    restored = make_forecaster()
    restored.load_state_dict(torch.load(tmp_path / "forecaster.pt"))
    for (window,) in sensor_batches(count=2):
        assert restored(window).shape == (len(window), horizon)
