"""A text classifier whose dropout is switched by configuration flags, not by the mode:
each functional dropout keeps running after `model.eval()`."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class TextCNN(nn.Module):
    def __init__(self, vocab, dim=128, classes=4, kernel_sizes=(3, 4, 5), dropout=0.5, word_dropout=0.0):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.convs = nn.ModuleList(nn.Conv1d(dim, 100, k) for k in kernel_sizes)
        self.fc = nn.Linear(100 * len(kernel_sizes), classes)
        self.dropout, self.word_dropout = dropout, word_dropout

    def forward(self, tokens):
        x = self.embed(tokens)
        if self.word_dropout > 0:
            x = F.dropout2d(x, self.word_dropout)  # expect: TL011
        x = x.transpose(1, 2)
        pooled = [F.relu(conv(x)).amax(-1) for conv in self.convs]
        h = torch.cat(pooled, 1)
        if self.training:
            h = h * 1.0
        else:
            h = F.dropout(h, p=self.dropout)  # expect: TL011
        return self.fc(h)


def train_epoch(model, loader, optimizer):
    model.train()
    for tokens, labels in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(tokens), labels)
        loss.backward()
        optimizer.step()


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    correct = total = 0
    for tokens, labels in loader:
        correct += (model(tokens).argmax(1) == labels).sum().item()
        total += labels.numel()
    return correct / total
