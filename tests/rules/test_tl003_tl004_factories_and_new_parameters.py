"""A loop whose iteration builds a model through a factory function (of this file or another) and
hands it to a trainer that builds its own optimizer runs a whole training per iteration (TL003
silent); an optimizer built over ``nn.Parameter`` tensors a comprehension creates in the iteration
cannot be built before the loop (TL004 silent). The hard negatives keep the findings."""

import ast
import textwrap

from project_helpers import lint_in_project

from torchlint.analysis.context import FileContext
from torchlint.analysis.definitions import Definition
from torchlint.torchmodel.fresh_runs import _returns_new_model

_TRAINER = """\
import torch
from torch import optim


def trainer(model, batches, iterations, learning_rate=0.001):
    model = model.to("cpu")
    optimizer = optim.Adam(model.parameters(), lr=learning_rate)
    for i in range(iterations):
        x, y = next(batches)
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()
    return model
"""

_SHARED_OPTIMIZER_TRAINER = """\
import torch


def trainer(model, optimizer, batches, iterations):
    for i in range(iterations):
        x, y = next(batches)
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()
    return model
"""

_MODELS = """\
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.fc = nn.Linear(size, size)

    def forward(self, x):
        return x + self.fc(x)


class Stack(nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.blocks = blocks

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def generic(size, depth):
    return Stack(nn.ModuleList([Block(size) for _ in range(depth)]))
"""

_EXPERIMENT = """\
import torch
from experiments.model import generic
from experiments.trainer import trainer


def forecast(patterns, data, size):
    forecasts = {}
    for pattern in patterns:
        model = generic(size, depth=3)
        model = trainer(model=model, batches=iter(data[pattern]), iterations=100)
        model.eval()
        with torch.no_grad():
            forecasts[pattern] = model(data[pattern].last_window())
    return forecasts
"""


def _experiment(tmp_path, trainer: str, experiment: str = _EXPERIMENT) -> list:
    files = {
        "experiments/__init__.py": "",
        "experiments/model.py": _MODELS,
        "experiments/trainer.py": trainer,
        "experiments/m3/main.py": experiment,
    }
    return lint_in_project(tmp_path, files, "experiments/m3/main.py", "TL003")


def test_a_model_from_another_files_factory_trained_by_its_own_optimizer_is_a_run_of_its_own(tmp_path):
    assert _experiment(tmp_path, _TRAINER) == []


def test_a_factory_model_trained_by_an_optimizer_built_before_the_loop_is_reported(tmp_path):
    experiment = _EXPERIMENT.replace(
        "    forecasts = {}\n",
        "    forecasts = {}\n    optimizer = torch.optim.SGD(generic(size, depth=3).parameters(), lr=0.1)\n",
    ).replace("model = trainer(model=model, batches", "model = trainer(model=model, optimizer=optimizer, batches")
    found = _experiment(tmp_path, _SHARED_OPTIMIZER_TRAINER, experiment)
    assert [(f.line, f.code) for f in found] == [(10, "TL003")]
    assert "`generic(...)` builds a new model in every iteration of the loop at line 9" in found[0].message


def test_only_a_factory_that_constructs_what_it_returns_builds_a_new_model():
    source = textwrap.dedent(
        _MODELS
        + """

def wrap(base):
    return Stack(nn.ModuleList([base]))


def interpretable(size, depth):
    trend = Block(size)
    season = Block(size)
    return Stack(nn.ModuleList([trend for _ in range(depth)] + [season for _ in range(depth)]))


def placed(size, device):
    net = Stack(nn.ModuleList([Block(size), Block(size)]))
    return net.to(device)


_CACHE = {}


def cached(size):
    return _CACHE.setdefault(size, Block(size))
"""
    )
    ctx = FileContext("model.py", source, ast.parse(source))

    def new_model(name):
        return _returns_new_model(Definition(ctx, ctx.functions[name][0]))

    assert new_model("generic") and new_model("placed") and new_model("interpretable")
    # The caller's model wrapped, and a model kept from an earlier call, are not new.
    assert not new_model("wrap") and not new_model("cached")


_MERGE = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


def orthogonalize(a_list, b_list, steps, lr):
    a_orig = [a.detach().clone() for a in a_list]
    b_orig = [b.detach().clone() for b in b_list]
    a_params = [nn.Parameter(a.clone()) for a in a_orig]
    b_params = [nn.Parameter(b.clone()) for b in b_orig]
    optimizer = torch.optim.Adam(PARAMS, lr=lr)
    for step in range(steps):
        optimizer.zero_grad()
        loss = sum(F.mse_loss(a, o) for a, o in zip(a_params, a_orig))
        loss = loss + sum((a @ b).pow(2).sum() for a, b in zip(a_params, b_params))
        loss.backward()
        optimizer.step()
    return [a.detach() for a in a_params], [b.detach() for b in b_params]


def merge(states, adapter):
    merged = {}
    for key_idx, key in enumerate(sorted(states[0])):
        a_list = [state[key]["A"] for state in states]
        b_list = [state[key]["B"] for state in states]
        merged[key] = orthogonalize(a_list, b_list, steps=10, lr=0.01)
    return merged
"""


def test_an_optimizer_over_parameters_a_comprehension_creates_is_built_where_it_must_be(lint):
    assert lint(_MERGE.replace("PARAMS", "a_params + b_params"), "TL004") == []
    assert lint(_MERGE.replace("PARAMS", "a_params"), "TL004") == []


def test_an_optimizer_over_a_models_parameters_rebuilt_per_key_is_reported(lint):
    # The comprehension hands on the adapter's existing parameters: its Adam state restarts per key.
    source = (
        _MERGE.replace("PARAMS", "[p for p in adapter.parameters()] + b_params")
        .replace(
            "orthogonalize(a_list, b_list, steps=10, lr=0.01)",
            "orthogonalize(a_list, b_list, steps=10, lr=0.01, adapter=adapter)",
        )
        .replace(
            "def orthogonalize(a_list, b_list, steps, lr):", "def orthogonalize(a_list, b_list, steps, lr, adapter):"
        )
    )
    found = lint(source, "TL004")
    assert [(f.line, f.code) for f in found] == [(11, "TL004")]
    assert "through the call at line 26" in found[0].message
