"""Trend/season decomposition whose blocks each learn a projection: kept in a plain list, their
weights are neither trained nor saved."""

import torch
from torch import nn


class MovingAverage(nn.Module):
    def __init__(self, window):
        super().__init__()
        self.window = window
        self.pool = nn.AvgPool1d(kernel_size=window, stride=1, padding=0)

    def forward(self, series):
        left = series[:, :1, :].repeat(1, (self.window - 1) // 2, 1)
        right = series[:, -1:, :].repeat(1, self.window // 2, 1)
        padded = torch.cat([left, series, right], dim=1)
        return self.pool(padded.transpose(1, 2)).transpose(1, 2)


class Decompose(nn.Module):
    def __init__(self, window):
        super().__init__()
        self.average = MovingAverage(window)
        self.refine = nn.Linear(window, window)

    def forward(self, series):
        trend = self.average(series)
        return series - trend, trend


class MultiScaleDecompose(nn.Module):
    def __init__(self, windows, channels):
        super().__init__()
        self.blocks = [Decompose(w) for w in windows]  # expect: TL013
        self.mix = nn.Linear(channels, channels)

    def forward(self, series):
        seasons, trends = zip(*(block(series) for block in self.blocks))
        season = torch.stack(seasons).mean(0)
        return self.mix(season), torch.stack(trends).mean(0)
