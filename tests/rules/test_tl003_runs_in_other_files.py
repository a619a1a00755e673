"""TL003 and a loop whose body builds a model and hands it to a function of another file of the
project. When that function builds its own optimizer over the model and steps it (a whole training
run: ``main(model, train_params)`` of a training script), each iteration is a run of its own, a
sweep over settings, and the model must be built there (fresh_runs.trained_in_own_run, read from
the callee's summary). When it is handed the caller's optimizer (``train_one_epoch(model, optimizer,
loader)``), the loop continues one run and the rebuilt model is still reported."""

import ast
import textwrap

import pytest
from expect_markers import check
from project_helpers import write

from torchlint.analysis.context import FileContext
from torchlint.analysis.definitions import Definition
from torchlint.engine.lint import lint_file
from torchlint.engine.rule import all_rules
from torchlint.torchmodel.fresh_runs import trained_in_own_run

# A training script of the project: `main` builds its optimizer over the model it is handed (after
# moving it) and trains it for epochs of batches through a helper; `train_one_epoch` steps the
# optimizer its caller hands it.
_TRAINING = """
import torch
from torch import nn, optim


def run_epoch(net, loader, opt, criterion):
    net.train()
    for images, labels in loader:
        opt.zero_grad()
        criterion(net(images), labels).backward()
        opt.step()


def main(net, settings, loader):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    net = net.to(device)
    opt = optim.Adam(filter(lambda p: p.requires_grad, net.parameters()), lr=settings["rate"])
    criterion = nn.CrossEntropyLoss()
    for epoch in range(settings["epochs"]):
        run_epoch(net, loader, opt, criterion)
    torch.save(net.state_dict(), settings["out"])


def run_training(model, rate, loader):
    optimizer = optim.SGD(model.parameters(), rate, momentum=0.9)
    for _ in range(10):
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
    return model


def train_one_epoch(model, optimizer, loader):
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
"""

_NETS = """
from torch import nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.conv = nn.Conv2d(3, width, 3)

    def forward(self, x):
        return self.conv(x)


class Classifier(nn.Module):
    def __init__(self, block):
        super().__init__()
        self.block = block
        self.head = nn.LazyLinear(10)

    def forward(self, x):
        return self.head(self.block(x).flatten(1))
"""


@pytest.fixture
def lint(tmp_path):
    """Lint ``source`` as ``sweep.py`` of a project holding the networks and the training script."""

    def run(source: str, *codes: str) -> list:
        write(tmp_path, {"pyproject.toml": "", "training.py": _TRAINING, "nets.py": _NETS, "sweep.py": source})
        findings = lint_file(str(tmp_path / "sweep.py"), [all_rules()[c] for c in codes]).findings
        return sorted(findings, key=lambda f: (f.line, f.column))

    return run


# ----- the real bug, still reported ---------------------------------------------------------------
@pytest.mark.parametrize("header", ["for i in range(100):", "for epoch in range(100):"])
def test_a_model_rebuilt_around_an_epoch_function_of_another_file_is_still_reported(lint, header):
    # `train_one_epoch` steps the optimizer built once, before the loop, over the first model.
    source = f"""
import torch
from torch import nn
from training import train_one_epoch

model = nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
{header}
    model = nn.Linear(8, 1)  # expect: TL003
    train_one_epoch(model, optimizer, loader)
"""
    findings = check(lint, source, "TL003")
    assert findings[0].message.startswith(
        f"`nn.Linear(...)` builds a new model in every iteration of the loop at line 8 (`{header[:-1]}`)"
    )
    assert "the optimizer built outside the loop keeps updating the old model's parameters" in findings[0].message


def test_a_model_rebuilt_in_the_epoch_loop_is_reported_even_when_the_callee_builds_an_optimizer(lint):
    # A loop named for epochs continues one run, whatever the call does with the model.
    source = """
from nets import Block, Classifier
from training import run_training

for epoch in range(args.epochs):
    model = Classifier(Block(16))  # expect: TL003
    run_training(model, 0.1, loader)
"""
    check(lint, source, "TL003")


# ----- whole runs in another file: silent ---------------------------------------------------------
def test_a_sweep_handing_each_fresh_model_to_a_whole_run_of_another_file_is_silent(lint):
    source = """
from nets import Block, Classifier
from training import main

for width in widths:
    block = Block(width)
    net = Classifier(block)
    main(net, settings={"rate": 1e-3, "epochs": 30, "out": f"width_{width}.pt"}, loader=loader)
"""
    assert check(lint, source, "TL003") == []


def test_a_sweep_over_sizes_with_the_optimizer_built_in_the_callee_is_silent(lint):
    source = """
from torch import nn
from training import run_training

results = {}
for hidden in hidden_sizes:
    model = nn.Sequential(nn.Linear(8, hidden), nn.ReLU(), nn.Linear(hidden, 1))
    results[hidden] = run_training(model, 0.01, loader)
"""
    assert check(lint, source, "TL003") == []


def test_a_loop_named_for_iterations_counting_whole_runs_of_another_file_is_silent(lint):
    # The iteration count is a setting of the network: each value gets its own run, whose optimizer
    # steps two loops down (epochs of batches) in `main`.
    source = """
from nets import Block, Classifier
from training import main


def explore(loader):
    for n_iters in [1, 2, 4, 8]:
        net = Classifier(Block(n_iters))
        main(net, {"rate": 1e-3, "epochs": 50, "out": f"iters_{n_iters}.pt"}, loader)
"""
    assert check(lint, source, "TL003") == []


# ----- the summary ------------------------------------------------------------------------------------
def test_the_summary_names_the_parameters_trained_with_an_optimizer_built_in_the_call():
    source = textwrap.dedent(
        _TRAINING
        + """

def fine_tune(model, loader, extra):
    optimizer = optim.SGD(list(model.parameters()) + [extra], lr=0.1)
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


def build_only(model):
    return optim.SGD(model.parameters(), lr=0.1)
"""
    )
    ctx = FileContext("training.py", source, ast.parse(source))

    def trained(name):
        return trained_in_own_run(Definition(ctx, ctx.functions[name][0]))

    # Each with the fewest loops around a step of its optimizer.
    assert trained("main") == {("net", 2)}
    assert trained("run_training") == {("model", 2)}
    # Handed the caller's optimizer; an optimizer also over a tensor of the caller; never stepped.
    assert trained("train_one_epoch") == frozenset()
    assert trained("fine_tune") == frozenset()
    assert trained("build_only") == frozenset()
