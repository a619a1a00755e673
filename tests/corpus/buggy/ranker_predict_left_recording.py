"""Implicit-feedback ranker whose public predict() records a graph; the negatives scored for the
training loss by a helper named for prediction need it, and are fine."""

import numpy as np
import torch
from torch import nn


class PairwiseLoss(nn.Module):
    def forward(self, positive, negative):
        return torch.nn.functional.softplus(negative - positive).mean()


class MatrixFactorizationRanker:
    def __init__(self, n_users, n_items, dim=32, lr=1e-2):
        self.n_items = n_items
        self.net = nn.Bilinear(dim, dim, 1)
        self.users = nn.Embedding(n_users, dim)
        self.items = nn.Embedding(n_items, dim)
        self.loss_fn = PairwiseLoss()
        params = [*self.net.parameters(), *self.users.parameters(), *self.items.parameters()]
        self.optimizer = torch.optim.Adam(params, lr=lr)

    def _predict_negatives(self, user_ids):
        negatives = torch.randint(self.n_items, (len(user_ids),))
        return self.net(self.users(user_ids), self.items(negatives)).squeeze(-1)

    def fit(self, pairs, epochs=5, batch_size=256):
        for epoch in range(epochs):
            order = np.random.permutation(len(pairs))
            for start in range(0, len(order), batch_size):
                batch = torch.as_tensor(pairs[order[start : start + batch_size]])
                user_ids, item_ids = batch[:, 0], batch[:, 1]
                positive = self.net(self.users(user_ids), self.items(item_ids)).squeeze(-1)
                negative = self._predict_negatives(user_ids)
                self.optimizer.zero_grad()
                loss = self.loss_fn(positive, negative)
                loss.backward()
                self.optimizer.step()

    def predict(self, user_ids, item_ids):
        self.net.train(False)
        scores = self.net(self.users(user_ids), self.items(item_ids))  # expect: TL006
        return scores.detach().squeeze(-1).numpy()
