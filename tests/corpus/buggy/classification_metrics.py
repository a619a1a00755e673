"""Evaluation helpers of an image classifier: a top-k accuracy that views a transposed tensor."""
import torch
import torch.nn as nn


class AverageMeter:
    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, value, n=1):
        self.sum += value * n
        self.count += n

    @property
    def avg(self):
        return self.sum / max(self.count, 1)


def accuracy(output, target, topk=(1,)):
    maxk = max(topk)
    batch_size = target.size(0)
    _, pred = output.topk(maxk, 1, True, True)
    pred = pred.t()
    correct = pred.eq(target.view(1, -1).expand_as(pred))
    res = []
    for k in topk:
        correct_k = correct[:k].view(-1).float().sum(0, keepdim=True)  # expect: TL008
        res.append(correct_k.mul_(100.0 / batch_size))
    return res


def validate(val_loader, model, criterion, device):
    losses, top1, top5 = AverageMeter(), AverageMeter(), AverageMeter()
    model.eval()
    val_loss = 0.0
    with torch.no_grad():
        for images, target in val_loader:
            images, target = images.to(device), target.to(device)
            output = model(images)
            loss = criterion(output, target)
            val_loss += loss  # no graph under no_grad: not a TL010
            acc1, acc5 = accuracy(output, target, topk=(1, 5))
            losses.update(loss.item(), images.size(0))
            top1.update(acc1[0].item(), images.size(0))
            top5.update(acc5[0].item(), images.size(0))
    print(f" * Acc@1 {top1.avg:.3f} Acc@5 {top5.avg:.3f} loss {val_loss.item() / len(val_loader):.4f}")
    return top1.avg


def train(train_loader, val_loader, model, optimizer, epochs, device):
    criterion = nn.CrossEntropyLoss().to(device)
    best = 0.0
    for epoch in range(epochs):
        model.train()
        for images, target in train_loader:
            images, target = images.to(device), target.to(device)
            optimizer.zero_grad()
            criterion(model(images), target).backward()
            optimizer.step()
        best = max(best, validate(val_loader, model, criterion, device))
    return best
