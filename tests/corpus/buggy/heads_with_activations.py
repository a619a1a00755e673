"""Models that end in Softmax/Sigmoid layers, trained with losses that expect logits."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class IntentClassifier(nn.Module):
    def __init__(self, vocab, dim=128, n_intents=20):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim)
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, n_intents), nn.Softmax(dim=-1))

    def forward(self, tokens, offsets):
        return self.head(self.emb(tokens, offsets))


class Tagger(nn.Module):
    def __init__(self, dim=128, n_tags=12):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, dim), nn.Tanh(), nn.Linear(dim, n_tags), nn.Sigmoid())

    def forward(self, x):
        return self.net(x)


def train(loader, vocab, epochs=5):
    intents = IntentClassifier(vocab)
    tagger = Tagger()
    params = list(intents.parameters()) + list(tagger.parameters())
    optimizer = torch.optim.Adam(params, lr=1e-3)
    ce = nn.CrossEntropyLoss()
    bce = nn.BCEWithLogitsLoss()
    for epoch in range(epochs):
        for tokens, offsets, feats, intent, tags in loader:
            probs = intents(tokens, offsets)
            loss = ce(probs, intent)  # expect: TL012
            tag_scores = tagger(feats)
            loss = loss + bce(tag_scores, tags.float())  # expect: TL020
            log_probs = F.log_softmax(probs, dim=-1)
            loss = loss + F.cross_entropy(log_probs, intent)  # expect: TL012
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
