"""A video classifier trained with mixed soft labels that keeps a per-class loss table across the
epoch (built once, added into every step), and a validation helper that returns its accuracy."""
import torch
import torch.nn.functional as F


def train_one_epoch(model, loader, optimizer, num_classes):
    model.train()
    class_losses = torch.zeros(num_classes, device="cuda")
    for clips, labels in loader:
        clips, labels = clips.cuda(non_blocking=True), labels.cuda()
        scores = model(clips)
        per_clip = F.cross_entropy(scores, labels, reduction="none")
        loss = per_clip.mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        top = labels.argmax(1)
        class_losses[top] += per_clip  # expect: TL010
    return class_losses / len(loader)


def validate(model, loader):
    model.eval()
    hits = total = 0
    for clips, labels in loader:
        scores = model(clips.cuda())  # expect: TL006
        assert scores.shape[0] == labels.shape[0]
        hits += (scores.argmax(1).cpu() == labels.argmax(1)).sum().item()
        total += labels.shape[0]
    return hits / total
