"""MAE-style pretraining step: a NativeScaler-like helper hides backward and step."""
import math
import sys

import torch


class NativeScalerWithGradNormCount:
    state_dict_key = "amp_scaler"

    def __init__(self):
        self._scaler = torch.amp.GradScaler("cuda")

    def __call__(self, loss, optimizer, clip_grad=None, parameters=None, update_grad=True):
        self._scaler.scale(loss).backward()
        if not update_grad:
            return None
        if clip_grad is not None:
            self._scaler.unscale_(optimizer)
            norm = torch.nn.utils.clip_grad_norm_(parameters, clip_grad)
        else:
            norm = None
        self._scaler.step(optimizer)
        self._scaler.update()
        return norm

    def state_dict(self):
        return self._scaler.state_dict()


def adjust_learning_rate(optimizer, epoch, lr, warmup_epochs, epochs):
    if epoch < warmup_epochs:
        new_lr = lr * epoch / warmup_epochs
    else:
        new_lr = lr * 0.5 * (1.0 + math.cos(math.pi * (epoch - warmup_epochs) / (epochs - warmup_epochs)))
    for group in optimizer.param_groups:
        group["lr"] = new_lr


def train_one_epoch(model, data_loader, optimizer, device, epoch, loss_scaler, args):
    model.train(True)
    accum_iter = args.accum_iter
    optimizer.zero_grad()
    for data_iter_step, (samples, _) in enumerate(data_loader):
        if data_iter_step % accum_iter == 0:
            adjust_learning_rate(optimizer, data_iter_step / len(data_loader) + epoch, args.lr,
                                 args.warmup_epochs, args.epochs)
        samples = samples.to(device, non_blocking=True)
        with torch.autocast("cuda"):
            loss, _, _ = model(samples, mask_ratio=args.mask_ratio)
        loss_value = loss.item()
        if not math.isfinite(loss_value):
            print(f"Loss is {loss_value}, stopping training")
            sys.exit(1)
        loss /= accum_iter
        loss_scaler(loss, optimizer, parameters=model.parameters(),
                    update_grad=(data_iter_step + 1) % accum_iter == 0)
        if (data_iter_step + 1) % accum_iter == 0:
            optimizer.zero_grad()
        torch.cuda.synchronize()
