"""A timm-flavoured train_one_epoch: nested forward/backward closures, accumulation, EMA."""
from contextlib import suppress

import torch


def train_one_epoch(epoch, model, loader, optimizer, loss_fn, lr_scheduler=None, loss_scaler=None,
                    amp_autocast=suppress, model_ema=None, accum_steps=1, clip_grad=None):
    model.train()
    num_batches = len(loader)
    num_updates = epoch * ((num_batches + accum_steps - 1) // accum_steps)
    optimizer.zero_grad()
    running = 0.0
    for batch_idx, (input, target) in enumerate(loader):
        need_update = (batch_idx + 1) % accum_steps == 0 or batch_idx + 1 == num_batches
        input, target = input.cuda(non_blocking=True), target.cuda(non_blocking=True)

        def _forward():
            with amp_autocast():
                output = model(input)
                loss = loss_fn(output, target)
            if accum_steps > 1:
                loss /= accum_steps
            return loss

        def _backward(_loss):
            if loss_scaler is not None:
                loss_scaler(_loss, optimizer, clip_grad=clip_grad, parameters=model.parameters(),
                            need_update=need_update)
            else:
                _loss.backward()
                if need_update:
                    if clip_grad is not None:
                        torch.nn.utils.clip_grad_norm_(model.parameters(), clip_grad)
                    optimizer.step()

        loss = _forward()
        _backward(loss)
        running += loss.item() * accum_steps
        if not need_update:
            continue

        num_updates += 1
        optimizer.zero_grad()
        if model_ema is not None:
            model_ema.update(model, step=num_updates)
        if lr_scheduler is not None:
            lr_scheduler.step_update(num_updates=num_updates)
    return running / num_batches


@torch.no_grad()
def validate(model, loader, loss_fn, amp_autocast=suppress):
    model.eval()
    total, hits, loss_sum = 0, 0, 0.0
    for input, target in loader:
        input, target = input.cuda(), target.cuda()
        with amp_autocast():
            output = model(input)
        loss_sum += loss_fn(output, target).item() * input.size(0)
        hits += (output.argmax(-1) == target).sum().item()
        total += input.size(0)
    return {"loss": loss_sum / total, "top1": 100.0 * hits / total}
