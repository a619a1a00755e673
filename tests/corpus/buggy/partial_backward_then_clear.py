"""A backward helper bound with functools.partial, called before the gradients are cleared;
an adapter index partly filled with modules installed nowhere; a tensor scale that its own
initialiser resets (still no parameter)."""

import functools

import torch
import torch.nn as nn


def backward_pass(mixed, objective):
    if mixed:
        objective.float().backward()
    else:
        objective.backward()


def install(root, dotted, module):
    setattr(root, dotted, module)


class Gate(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.gate = nn.Linear(inner.out_features, 1)


class GatedNetwork(nn.Module):
    def __init__(self, net, paths, spares):
        super().__init__()
        self.net = net
        self.gates = {}  # expect: TL013
        for path in paths:
            gate = Gate(net.get_submodule(path))
            install(net, path, gate)
            self.gates[path] = gate
        for name in spares:
            self.gates[name] = Gate(nn.Linear(8, 8))
        self.scale = torch.ones(8, requires_grad=True)  # expect: TL013
        self.reset_parameters()

    def reset_parameters(self):
        self.scale.data.fill_(1.0)

    def forward(self, x):
        return self.net(x) * self.scale


def fit(model, loader, mixed=False):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    run_backward = functools.partial(backward_pass, mixed)
    for x, y in loader:
        objective = nn.functional.mse_loss(model(x), y)
        run_backward(objective)
        optimizer.zero_grad()  # expect: TL002
        optimizer.step()
