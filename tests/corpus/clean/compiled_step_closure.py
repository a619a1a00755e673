"""A contrastive trainer whose per-batch step is a closure built once (optionally compiled).

The closure runs the backward and the optimizer step; clearing stays in the epoch loop, before each
call, because the compiler would break its graph on `zero_grad`.
"""
import torch


def make_train_step(model, optimizer, loss_fn, grad_clip_norm=None):
    clip_params = tuple(model.parameters()) if grad_clip_norm is not None else ()

    def train_step(images, texts):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            image_features, text_features, logit_scale = model(images, texts)
            total_loss = loss_fn(image_features, text_features, logit_scale)
        total_loss.backward()
        if grad_clip_norm is not None:
            torch.nn.utils.clip_grad_norm_(clip_params, grad_clip_norm, norm_type=2.0)
        optimizer.step()
        return total_loss.detach()

    return train_step


def train_one_epoch(model, optimizer, loss_fn, loader, scheduler, compile_step=False, grad_clip_norm=None):
    model.train()
    if compile_step:
        train_step = torch.compile(make_train_step(model, optimizer, loss_fn, grad_clip_norm))
    else:
        train_step = make_train_step(model, optimizer, loss_fn, grad_clip_norm)
    for i, (images, texts) in enumerate(loader):
        scheduler(i)
        optimizer.zero_grad(set_to_none=True)
        loss = train_step(images, texts)
        with torch.no_grad():
            model.logit_scale.clamp_(0, 4.6052)
        if i % 100 == 0:
            print(f"step {i}: loss {loss.item():.4f}")
