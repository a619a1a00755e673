"""A CLIP-style trainer whose backward helper scales the loss only when a GradScaler is given; the
clip on the other branch (no scaler) sees unscaled gradients, the scaler branch unscales first."""
import math

import torch


def backward(total_loss, scaler):
    if scaler is not None:
        scaler.scale(total_loss).backward()
    else:
        total_loss.backward()


def train_one_epoch(model, loader, loss_fn, optimizer, scaler, scheduler, args):
    model.train()
    for i, (images, texts) in enumerate(loader):
        scheduler(i)
        optimizer.zero_grad()
        with torch.autocast("cuda", enabled=scaler is not None):
            image_features, text_features, logit_scale = model(images, texts)
            total_loss = loss_fn(image_features, text_features, logit_scale)
        backward(total_loss, scaler)
        if scaler is not None:
            if args.grad_clip_norm is not None:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip_norm, norm_type=2.0)
            scaler.step(optimizer)
            scaler.update()
        else:
            if args.grad_clip_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip_norm, norm_type=2.0)
            optimizer.step()
        with torch.no_grad():
            model.logit_scale.clamp_(0, math.log(100))
