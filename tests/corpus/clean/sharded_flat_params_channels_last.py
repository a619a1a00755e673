"""Flat parameter buffers for a sharded optimizer, with channels-last conv weights laid out as NHWC.

A conv weight in channels_last has strides (HWC, 1, WC, C): permuting it to (N, H, W, C) lists the
dimensions in memory order, so the flat `.view(-1)` needs no copy. The positional table of a ViT is
resized for a new grid, then flattened back to (tokens, width).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class FlatShards:
    def __init__(self, model: nn.Module, world_size: int):
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.world_size = world_size

    def flat_view(self, param: torch.Tensor) -> torch.Tensor:
        if param.dim() == 4 and param.is_contiguous(memory_format=torch.channels_last):
            param = param.permute(0, 2, 3, 1)
        return param.detach().view(-1)

    def gather_grads(self) -> torch.Tensor:
        pieces = []
        for param in self.params:
            if param.grad is None:
                continue
            if param.grad.is_contiguous(memory_format=torch.channels_last):
                grad = param.grad.permute(0, 2, 3, 1)
            else:
                grad = param.grad
            pieces.append(grad.view(-1))
        return torch.cat(pieces)


class PatchTable(nn.Module):
    def __init__(self, grid: int, width: int):
        super().__init__()
        self.grid = grid
        self.table = nn.Parameter(torch.zeros(grid * grid + 1, width))

    def resized(self, tokens: torch.Tensor, new_h: int, new_w: int) -> torch.Tensor:
        cls_row, rows = self.table[0], self.table[1:]
        width = tokens.shape[-1]
        maps = F.interpolate(
            rows.reshape(1, self.grid, self.grid, width).permute(0, 3, 1, 2),
            size=(new_h, new_w),
            mode="bicubic",
            align_corners=False,
        )
        rows = maps.permute(0, 2, 3, 1).view(-1, width)
        return torch.cat((cls_row.unsqueeze(0), rows), dim=0)
