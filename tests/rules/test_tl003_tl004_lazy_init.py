"""TL003/TL004 and lazy initialisation: a construction guarded by a test on the very holder it fills
(``if self.head is None: self.head = ...``, ``if "opt" not in state:``, ``opt = get_optimizer(opt)``
with ``if opt is None:`` inside) runs on the first pass only, unless the loop empties that holder
again (analysis/lazy_init.py)."""

from expect_markers import check

_TRAINER = """
import torch
from torch import nn

class Head(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, 10)
    def forward(self, x):
        return self.fc(x)

class Trainer:
    def __init__(self, backbone):
        self.backbone = backbone
        self.head = None
        self.state = {{}}

    def step(self, x, y):
        feats = self.backbone(x)
{build}
        opt = self.state["opt"]
        opt.zero_grad()
        nn.functional.cross_entropy(self.head(feats), y).backward()
        opt.step()

    def fit(self, loader, epochs):
        for epoch in range(epochs):
            for x, y in loader:
{loop_extra}                self.step(x, y)
"""

_LAZY = """\
        if self.head is None:
            self.head = Head(feats.shape[1]){m1}
        if "opt" not in self.state:
            params = list(self.backbone.parameters()) + list(self.head.parameters())
            self.state["opt"] = torch.optim.Adam(params, lr=1e-3){m2}"""

_SWITCHED = """\
        if self.rebuild_every_step:
            self.head = Head(feats.shape[1]){m1}
        if self.head is not None:
            params = list(self.backbone.parameters()) + list(self.head.parameters())
            self.state["opt"] = torch.optim.Adam(params, lr=1e-3){m2}"""


def test_head_and_optimizer_filled_on_the_first_step_are_silent(lint):
    source = _TRAINER.format(build=_LAZY.format(m1="", m2=""), loop_extra="")
    check(lint, source, "TL003")
    check(lint, source, "TL004")


def test_guard_on_another_condition_is_still_reported(lint):
    # The head is rebuilt under a flag that does not test `self.head`, and the optimizer under
    # a test that is true every step once the head exists: both run again each step.
    source = _TRAINER.format(build=_SWITCHED.format(m1="  # expect: TL003", m2="  # expect: TL004"), loop_extra="")
    check(lint, source, "TL003")
    check(lint, source, "TL004")


_GETTER = """
import torch

def get_optimizer(optimizer, model, lr):
    if optimizer is None:
        optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    return optimizer

def train(model, loader, epochs, lr):
    optimizer = None
    for epoch in range(epochs):
{reset}        for x, y in loader:
            optimizer = get_optimizer(optimizer, model, lr){marker}
            optimizer.zero_grad()
            model(x).sub(y).pow(2).mean().backward()
            optimizer.step()
"""


def test_optimizer_handed_back_into_the_holder_it_was_given_is_silent(lint):
    check(lint, _GETTER.format(marker="", reset=""), "TL004")


def test_optimizer_holder_emptied_every_epoch_is_reported(lint):
    check(lint, _GETTER.format(marker="  # expect: TL004", reset="        optimizer = None\n"), "TL004")


def test_optimizer_from_a_getter_not_assigned_back_is_reported(lint):
    source = (
        _GETTER.format(marker="  # expect: TL004", reset="")
        .replace(
            "optimizer = get_optimizer(optimizer, model, lr)  # expect: TL004",
            "opt = get_optimizer(optimizer, model, lr)  # expect: TL004",
        )
        .replace("optimizer.zero_grad()", "opt.zero_grad()")
        .replace("optimizer.step()", "opt.step()")
    )
    check(lint, source, "TL004")


def test_layer_cached_on_the_module_across_steps_is_silent(lint):
    source = """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.proj = None
    def forward(self, x):
        if self.proj is None:
            self.proj = nn.Linear(8, 2)
        return self.proj(self.body(x))

def train(net, optimizer, loader, epochs):
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(net(x), y).backward()
            optimizer.step()
"""
    check(lint, source, "TL003")
