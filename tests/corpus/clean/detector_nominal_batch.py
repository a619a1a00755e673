"""A single-stage detector trained YOLO-style: the loss is summed over the batch (mean times the
batch size) and the optimizer steps once every `nbs // batch_size` batches, so every update is
the gradient summed over a nominal batch of 64 images, whatever the batch size."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class ComputeLoss:
    def __init__(self, box_gain=0.05, cls_gain=0.5, obj_gain=1.0):
        self.box_gain, self.cls_gain, self.obj_gain = box_gain, cls_gain, obj_gain

    def __call__(self, pred, targets):
        bs = pred.shape[0]
        lbox = F.smooth_l1_loss(pred[..., :4], targets[..., :4]) * self.box_gain
        lobj = F.binary_cross_entropy_with_logits(pred[..., 4], targets[..., 4]) * self.obj_gain
        lcls = F.binary_cross_entropy_with_logits(pred[..., 5:], targets[..., 5:]) * self.cls_gain
        return (lbox + lobj + lcls) * bs, torch.stack((lbox, lobj, lcls)).detach()


def train(model, loader, epochs=300, batch_size=16, nbs=64, lr0=0.01, device="cuda"):
    accumulate = max(round(nbs / batch_size), 1)
    weight_decay = 5e-4 * batch_size * accumulate / nbs
    optimizer = torch.optim.SGD(model.parameters(), lr=lr0, momentum=0.937, nesterov=True, weight_decay=weight_decay)
    lf = lambda x: ((1 - math.cos(x * math.pi / epochs)) / 2) * (0.01 - 1) + 1  # noqa: E731
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda=lf)
    scaler = torch.amp.GradScaler("cuda")
    compute_loss = ComputeLoss()
    last_opt_step = -1
    nb = len(loader)
    for epoch in range(epochs):
        model.train()
        mloss = torch.zeros(3, device=device)
        optimizer.zero_grad()
        for i, (imgs, targets) in enumerate(loader):
            ni = i + nb * epoch
            imgs = imgs.to(device, non_blocking=True).float() / 255
            with torch.autocast("cuda"):
                pred = model(imgs)
                loss, loss_items = compute_loss(pred, targets.to(device))
            scaler.scale(loss).backward()
            if ni - last_opt_step >= accumulate:
                scaler.unscale_(optimizer)
                nn.utils.clip_grad_norm_(model.parameters(), max_norm=10.0)
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
                last_opt_step = ni
            mloss = (mloss * i + loss_items) / (i + 1)
        scheduler.step()
        print(f"epoch {epoch}: box {mloss[0]:.4f} obj {mloss[1]:.4f} cls {mloss[2]:.4f}")
