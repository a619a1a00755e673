"""A fused scan kernel registered with the op registry, with a hand-written autograd backward."""

import os

import torch
from torch import nn
from torch.utils.cpp_extension import load

CHUNK = int(os.environ.get("SCAN_CHUNK", "64"))

load(
    name="fused_scan",
    sources=["kernels/fused_scan_op.cpp", "kernels/fused_scan.cu"],
    is_python_module=False,
    extra_cuda_cflags=["-O3", f"-D_CHUNK_={CHUNK}"],
)


class FusedScan(torch.autograd.Function):
    @staticmethod
    def forward(ctx, decay, values):
        with torch.no_grad():
            assert values.is_contiguous() and decay.is_contiguous()
            out = torch.empty_like(values)
            torch.ops.fused_scan.forward(decay, values, out)
            ctx.save_for_backward(decay, values, out)
            return out

    @staticmethod
    def backward(ctx, grad_out):
        with torch.no_grad():
            decay, values, out = ctx.saved_tensors
            grad_decay = torch.empty_like(decay)
            grad_values = torch.empty_like(values)
            torch.ops.fused_scan.backward(decay, values, out, grad_out.contiguous(), grad_decay, grad_values)
            return grad_decay, grad_values


class ScanMixer(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.decay = nn.Parameter(torch.full((width,), -1.0))
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        return self.proj(FusedScan.apply(self.decay.exp().neg().exp(), x.contiguous()))


def train(model, loader, epochs=1, lr=3e-4):
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    for _ in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
