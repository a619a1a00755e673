"""A gradient check of a custom kernel written under no_grad: the kernel's own `wkv.backward` is
fine, the autograd backward of the reference loss in the same block records nothing."""

import torch
from torch.utils.cpp_extension import load

wkv = None


class WKV(torch.autograd.Function):
    @staticmethod
    def forward(ctx, k, v, w):
        with torch.no_grad():
            y = torch.empty_like(v)
            wkv.forward(k, v, w.float().exp().neg(), y)
            ctx.save_for_backward(k, v, w)
            return y

    @staticmethod
    def backward(ctx, gy):
        k, v, w = ctx.saved_tensors
        with torch.no_grad():
            gk, gv, gw = torch.empty_like(k), torch.empty_like(v), torch.empty_like(w)
            wkv.backward(k, v, w.float().exp().neg(), gy.contiguous(), gk, gv, gw)
            return gk, gv, gw


def load_kernel(head_size):
    global wkv
    wkv = load(name=f"wkv_{head_size}", sources=["cuda/wkv_op.cpp", "cuda/wkv_cuda.cu"], verbose=True)


def check_gradients(k, v, w):
    load_kernel(64)
    with torch.no_grad():
        reference = (k * v * w).sum()
        reference.backward()  # expect: TL016
    return w.grad


def train(model, optimizer, loader):
    load_kernel(64)
    model.train()
    for k, v, w, target in loader:
        optimizer.zero_grad()
        loss = (WKV.apply(k, v, w) - target).pow(2).mean()
        loss.backward()
        optimizer.step()
