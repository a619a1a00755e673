"""A trainer split into tiny methods; the clearing method is called between backward and step."""
import torch
import torch.nn.functional as F


class Learner:
    def __init__(self, model, data, lr=1e-3, wd=1e-2):
        self.model = model
        self.data = data
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=lr, weight_decay=wd)
        self.losses = []

    def zero_grad(self):
        self.opt.zero_grad()

    def backward(self, loss):
        loss.backward()

    def step(self):
        self.opt.step()

    def one_batch(self, xb, yb):
        loss = F.cross_entropy(self.model(xb), yb)
        self.backward(loss)
        self.zero_grad()  # expect: TL002
        self.step()
        self.losses.append(loss.item())

    def fit(self, n_epoch):
        for epoch in range(n_epoch):
            self.model.train()
            for xb, yb in self.data:
                self.one_batch(xb, yb)
            print(f"epoch {epoch}: loss {sum(self.losses[-len(self.data):]) / len(self.data):.4f}")
