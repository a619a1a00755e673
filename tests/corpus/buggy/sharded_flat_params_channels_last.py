"""Flat parameter buffers for a sharded optimizer: the NHWC permute is taken without checking the layout.

For a default (contiguous) conv weight, `permute(0, 2, 3, 1)` separates the dimensions in memory and
the flat `.view(-1)` raises; the table of per-image tokens merges the batch across the channels.
"""
import torch
import torch.nn as nn


class FlatShards:
    def __init__(self, model: nn.Module, world_size: int):
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.world_size = world_size

    def flat_weight(self, layer: nn.Module) -> torch.Tensor:
        weight = layer.weight
        if weight.dim() == 4:
            weight = weight.permute(0, 2, 3, 1)
        return weight.detach().view(-1)  # expect: TL008

    def gather_grads(self) -> torch.Tensor:
        pieces = []
        for param in self.params:
            if param.grad is None:
                continue
            grad = param.grad.permute(0, 2, 3, 1) if param.dim() == 4 else param.grad
            pieces.append(grad.view(-1))  # expect: TL008
        return torch.cat(pieces)


def token_rows(feature_maps: torch.Tensor) -> torch.Tensor:
    batch, channels, height, width = feature_maps.shape
    return feature_maps.permute(0, 2, 3, 1).view(-1, channels)  # expect: TL008


def pooled_tokens(backbone: nn.Module, images: torch.Tensor) -> torch.Tensor:
    return token_rows(backbone(images)).mean(0)
