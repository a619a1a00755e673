"""Self-distillation with soft targets and a multi-task loss list rebuilt every step."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Backbone(nn.Module):
    def __init__(self, d_in=256, hidden=512, p=0.2):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.cls = nn.Linear(hidden, 100)
        self.attr = nn.Linear(hidden, 40)
        self.p = p

    def forward(self, x):
        h = F.dropout(F.relu(self.fc1(x)), self.p, self.training)
        h = F.dropout(F.relu(self.fc2(h)), p=self.p, training=self.training)
        return self.cls(h), self.attr(h)


def train(student, teacher, loader, epochs=10, T=2.0):
    teacher.eval()
    optimizer = torch.optim.AdamW(student.parameters(), lr=1e-3)
    for epoch in range(epochs):
        student.train()
        epoch_loss = 0.0
        for x, y_cls, y_attr in loader:
            with torch.no_grad():
                t_cls, t_attr = teacher(x)
                soft_cls = F.softmax(t_cls / T, dim=-1)
                soft_attr = torch.sigmoid(t_attr)
            s_cls, s_attr = student(x)
            losses = []
            losses.append(F.cross_entropy(s_cls, y_cls))
            losses.append(F.cross_entropy(s_cls / T, soft_cls) * T * T)
            losses.append(F.binary_cross_entropy_with_logits(s_attr, y_attr.float()))
            losses.append(F.binary_cross_entropy_with_logits(s_attr, soft_attr))
            loss = sum(losses)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            epoch_loss += loss.item()
        print(f"epoch {epoch}: loss {epoch_loss / len(loader):.4f}")


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    hits = attr_hits = n = 0
    for x, y_cls, y_attr in loader:
        logits, attr_logits = model(x)
        probs = torch.sigmoid(attr_logits)
        hits += (logits.argmax(-1) == y_cls).sum().item()
        attr_hits += ((probs > 0.5) == y_attr.bool()).float().mean(-1).sum().item()
        n += x.size(0)
    return hits / n, attr_hits / n
