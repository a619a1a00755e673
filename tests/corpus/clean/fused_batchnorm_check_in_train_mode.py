"""Checks a fused batch-norm against torch's in both modes: training mode is switched on on purpose."""

import torch
from torch import nn

from fused_ops import FusedBatchNorm2d


def report_difference(name, a, b):
    print(f"{name}: max abs difference {(a - b).abs().max().item():.2e}")


def validate_fused_batchnorm(reference, fused, batch, training):
    fused.load_state_dict(reference.state_dict())
    x_ref = batch.clone().requires_grad_()
    x_fused = batch.clone().requires_grad_()
    if training:
        reference.train()
        fused.train()
        out_ref = reference(x_ref)
        out_fused = fused(x_fused)
    else:
        reference.eval()
        fused.eval()
        with torch.no_grad():
            out_ref = reference(x_ref)
            out_fused = fused(x_fused)
    report_difference("output", out_ref, out_fused)
    if not training:
        return
    out_ref.square().sum().backward()
    out_fused.square().sum().backward()
    report_difference("weight grad", reference.weight.grad, fused.weight.grad)
    report_difference("input grad", x_ref.grad, x_fused.grad)


if __name__ == "__main__":
    for training in (True, False):
        validate_fused_batchnorm(nn.BatchNorm2d(16), FusedBatchNorm2d(16), torch.randn(8, 16, 32, 32), training)
