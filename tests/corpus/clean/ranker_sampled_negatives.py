"""Implicit-feedback ranker: negatives scored by a sampling helper inside the training step."""

import numpy as np
import torch
from torch import nn


class PairwiseLoss(nn.Module):
    def forward(self, positive, negative):
        return torch.nn.functional.softplus(negative - positive).mean()


class MatrixFactorizationRanker:
    def __init__(self, n_users, n_items, dim=32, lr=1e-2):
        self.n_items = n_items
        self.users = nn.Embedding(n_users, dim)
        self.items = nn.Embedding(n_items, dim)
        self.scorer = nn.Bilinear(dim, dim, 1)
        self.loss_fn = PairwiseLoss()
        params = [*self.users.parameters(), *self.items.parameters(), *self.scorer.parameters()]
        self.optimizer = torch.optim.SGD(params, lr=lr)

    def _score(self, user_ids, item_ids):
        return self.scorer(self.users(user_ids), self.items(item_ids)).squeeze(-1)

    def _predict_negatives(self, user_ids, samples=1):
        negatives = torch.randint(self.n_items, (len(user_ids) * samples,))
        scores = self.scorer(self.users(user_ids.repeat_interleave(samples)), self.items(negatives))
        return scores.view(len(user_ids), samples).mean(1)

    def fit(self, pairs, epochs=5, batch_size=256):
        for epoch in range(epochs):
            order = np.random.permutation(len(pairs))
            total = 0.0
            for start in range(0, len(order), batch_size):
                batch = torch.as_tensor(pairs[order[start : start + batch_size]])
                user_ids, item_ids = batch[:, 0], batch[:, 1]
                positive = self._score(user_ids, item_ids)
                self.optimizer.zero_grad()
                loss = self.loss_fn(positive, negative=self._predict_negatives(user_ids, samples=4))
                loss.backward()
                self.optimizer.step()
                total += loss.item()
            print(f"epoch {epoch}: {total:.3f}")

    @torch.no_grad()
    def predict(self, user_ids, item_ids):
        return self._score(user_ids, item_ids).numpy()
