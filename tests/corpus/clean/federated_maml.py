"""Federated averaging rounds and a first-order MAML step: fresh local copies and optimizers by design."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F


def local_update(global_model, loader, epochs=1, lr=0.01):
    local = copy.deepcopy(global_model)
    optimizer = torch.optim.SGD(local.parameters(), lr=lr)
    local.train()
    for _ in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            F.cross_entropy(local(x), y).backward()
            optimizer.step()
    return local.state_dict(), len(loader.dataset)


def fed_avg(global_model, client_loaders, rounds=50, clients_per_round=5):
    for rnd in range(rounds):
        chosen = torch.randperm(len(client_loaders))[:clients_per_round].tolist()
        updates = [local_update(global_model, client_loaders[c]) for c in chosen]
        total = sum(n for _, n in updates)
        averaged = {k: sum(sd[k].float() * (n / total) for sd, n in updates) for k in updates[0][0]}
        global_model.load_state_dict(averaged)
        print(f"round {rnd} done")
    return global_model


def fomaml(model, task_sampler, meta_steps=1000, inner_steps=5, inner_lr=0.05, meta_lr=1e-3):
    meta_opt = torch.optim.Adam(model.parameters(), lr=meta_lr)
    for step in range(meta_steps):
        meta_opt.zero_grad()
        for support, query in task_sampler.sample(4):
            learner = copy.deepcopy(model)
            inner_opt = torch.optim.SGD(learner.parameters(), lr=inner_lr)
            for _ in range(inner_steps):
                inner_opt.zero_grad()
                F.cross_entropy(learner(support[0]), support[1]).backward()
                inner_opt.step()
            learner.zero_grad()
            F.cross_entropy(learner(query[0]), query[1]).backward()
            for p, lp in zip(model.parameters(), learner.parameters()):
                p.grad = lp.grad.clone() / 4 if p.grad is None else p.grad + lp.grad / 4
        meta_opt.step()
    return model


if __name__ == "__main__":
    net = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 5))
    loaders = [torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(100, 20),
                                           torch.randint(0, 5, (100,))), batch_size=10) for _ in range(10)]
    fed_avg(net, loaders, rounds=3)
