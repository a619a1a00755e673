"""A mixture-of-experts layer and a multi-label classifier with correctly registered state."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MoE(nn.Module):
    def __init__(self, dim, n_experts=4, top_k=2, hidden_mult=4):
        super().__init__()
        self.experts = nn.ModuleList(
            nn.Sequential(nn.Linear(dim, hidden_mult * dim), nn.GELU(), nn.Linear(hidden_mult * dim, dim))
            for _ in range(n_experts)
        )
        self.gate = nn.Linear(dim, n_experts, bias=False)
        self.top_k = top_k
        self.expert_names = [f"expert_{i}" for i in range(n_experts)]
        self.heads = nn.ModuleDict({"main": nn.Linear(dim, dim), "aux": nn.Linear(dim, dim)})
        self.log_temp = nn.Parameter(torch.zeros(()))
        self.register_buffer("load", torch.zeros(n_experts), persistent=False)

    def forward(self, x):
        scores = self.gate(x) / self.log_temp.exp()
        weights, idx = scores.topk(self.top_k, dim=-1)
        weights = weights.softmax(dim=-1)
        out = torch.zeros_like(x)
        for slot in range(self.top_k):
            for e, expert in enumerate(self.experts):
                mask = idx[..., slot] == e
                if mask.any():
                    out[mask] += weights[..., slot][mask].unsqueeze(-1) * expert(x[mask])
        if self.training:
            self.load += F.one_hot(idx, len(self.experts)).flatten(0, -2).sum(0).float()
        return self.heads["main"](out)


class MultiLabel(nn.Module):
    def __init__(self, dim, n_labels):
        super().__init__()
        self.moe = MoE(dim)
        self.classifier = nn.Linear(dim, n_labels)

    def forward(self, x):
        return self.classifier(self.moe(x).mean(1))


def train_step(model, optimizer, x, y, threshold=0.5):
    model.train()
    logits = model(x)
    loss = F.binary_cross_entropy_with_logits(logits, y.float())
    probs = torch.sigmoid(logits)
    f1_proxy = ((probs > threshold) == y.bool()).float().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item(), f1_proxy.item()


def fit(model, loader, epochs=10):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        for x, y in loader:
            loss, acc = train_step(model, optimizer, x, y)
        print(f"epoch {epoch}: loss {loss:.4f} acc {acc:.3f}")
