"""Subdivided batches with per-step buffers (apex or plain backward), a meta-learning score that
the inner adaptation loop rebinds, and a step function that retries non-finite micro-batches."""

import math

import torch
import torch.nn.functional as F

try:
    from apex import amp
except ImportError:
    amp = None


def train_epoch(model, loader, optimizer, splits, use_apex, writer):
    model.train()
    for step, (images, labels) in enumerate(loader):
        optimizer.zero_grad()
        logits_parts = []
        loss_parts = []
        for part_x, part_y in zip(images.chunk(splits), labels.chunk(splits)):
            logits = model(part_x)
            logits_parts.append(logits)
            loss = F.cross_entropy(logits, part_y) / splits
            loss_parts.append(loss)
            if use_apex:
                with amp.scale_loss(loss, optimizer) as scaled:
                    scaled.backward()
            else:
                loss.backward()
        optimizer.step()
        accuracy = (torch.cat(logits_parts).argmax(1) == labels).float().mean()
        writer.add_scalar("loss", sum(loss_parts).item(), step)
        writer.add_scalar("accuracy", accuracy.item(), step)


def meta_score(encoder, head, head_optimizer, episodes, inner_steps):
    score = torch.zeros(1)
    for (support_x, support_y), (query_x, query_y) in episodes:
        for _ in range(inner_steps):
            features = encoder(support_x).detach()
            score = F.cross_entropy(head(features), support_y)
            head_optimizer.zero_grad()
            score.backward()
            head_optimizer.step()
        score += F.cross_entropy(head(encoder(query_x)), query_y)
    return score.item()


def train_step(batches, model, optimizer, accumulation):
    optimizer.zero_grad()
    finished, seen = False, 0
    while True:
        finished = False
        loss = model(next(batches)) / accumulation
        if math.isfinite(loss.item()):
            loss.backward()
            seen += 1
            if seen == accumulation:
                optimizer.step()
                finished = True
            if finished:
                break
        else:
            print("skipping a non-finite loss")
    return loss.item()
