"""A helper that only runs a module with no weights of its own (a pairwise similarity wrapping
``nn.CosineSimilarity``) on embeddings a model made records no graph of its own: TL006 points at
the model, not at the metric. A module with weights, in the same place, is still reported."""

_SOURCE = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class PairwiseCosineSimilarity(nn.Module):
    def __init__(self, eps=1e-8):
        super().__init__()
        self.cosine_similarity = nn.CosineSimilarity(dim=2, eps=eps)

    def forward(self, x, y):
        return self.cosine_similarity(x.unsqueeze(1), y.unsqueeze(0))


class Scorer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, y):
        return self.proj(x) @ y.t()


def topk_predictions(k, x_emb, label_emb, similarity):
    s = similarity(x_emb, label_emb)
    score = F.softmax(s, dim=1)
    _, top = score.topk(k, sorted=False)
    return top


def accuracy(embeddings, label_emb, labels):
    similarity = METRIC
    hits = 0
    for emb, label in zip(embeddings, labels):
        top = topk_predictions(5, emb, label_emb, similarity)
        hits += (top == label.unsqueeze(1)).any(1).sum().item()
    return hits / len(labels)
"""


def test_a_helper_running_only_a_weightless_module_is_not_evaluation(lint):
    assert lint(_SOURCE.replace("METRIC", "PairwiseCosineSimilarity()"), "TL006") == []


def test_a_helper_running_a_module_with_weights_is_reported(lint):
    found = lint(_SOURCE.replace("METRIC", "Scorer(128)"), "TL006")
    assert [(f.line, f.code) for f in found] == [(25, "TL006")]
    assert found[0].message.startswith("`similarity(...)` evaluates with autograd on in `topk_predictions()`")
