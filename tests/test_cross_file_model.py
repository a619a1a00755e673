"""The PyTorch model across the files of a project: a helper imported from a sibling module is read
(its effects, what it returns), a class imported from one is what its bases make it. Each project is
written into a temporary folder and linted by the real command, as a directory and file by file:
both must give the same findings."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import textwrap

import pytest

# The project phase (analysis/project.py: ctx.project, callgraph.resolve_call/resolve_name,
# analysis.summaries) is built on its own branch. Once it is on main, the PyTorch model reaches the
# other files through two seams: callgraph.resolve_callee/resolve_class (answer through
# resolve_call/resolve_name) and walk.EventWalker.effects (a function_summary of kind
# "torch.effects"); branch model-cross holds that wiring with these tests passing. Until then the
# tests that need another file are strict xfails.
NEEDS_PROJECT = pytest.mark.xfail(strict=True, reason="needs the project phase (analysis/project.py) on main")


def write(root: pathlib.Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


FP16_UTIL = """
    def zero_grad(model_params):
        for param in model_params:
            if param.grad is not None:
                param.grad.detach_()
                param.grad.zero_()
"""

TRAIN_WITH_HELPER = """
    import torch
    from fp16_util import zero_grad

    def train(model, loader):
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        for x, y in loader:
            zero_grad(model.parameters())
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
"""


def lint(root: pathlib.Path, *targets: str) -> list[tuple[str, int, str]]:
    """(file name, line, code) of the findings of `torchlint TARGETS`, run in ``root``."""
    cmd = [sys.executable, "-m", "torchlint", "--format", "json", "--no-cache", "--exit-zero", *targets]
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=True)
    return sorted((pathlib.Path(f["path"]).name, f["line"], f["code"]) for f in json.loads(proc.stdout))


def both_ways(root: pathlib.Path, *files: str) -> list[tuple[str, int, str]]:
    """The findings of a directory lint, checked equal to those of linting each file alone."""
    whole = lint(root, ".")
    one_by_one = sorted(f for name in files for f in lint(root, name))
    assert whole == one_by_one
    return whole


@NEEDS_PROJECT
def test_a_helper_of_a_sibling_module_that_clears_the_gradients_clears_them(tmp_path):
    write(tmp_path, {"pyproject.toml": "", "fp16_util.py": FP16_UTIL, "train.py": TRAIN_WITH_HELPER})
    assert both_ways(tmp_path, "fp16_util.py", "train.py") == []


def test_a_helper_of_a_sibling_module_that_clears_nothing_does_not(tmp_path):
    helper = FP16_UTIL.replace("param.grad.zero_()", "print(param.grad.norm())").replace("param.grad.detach_()", "pass")
    write(tmp_path, {"pyproject.toml": "", "fp16_util.py": helper, "train.py": TRAIN_WITH_HELPER})
    assert both_ways(tmp_path, "fp16_util.py", "train.py") == [("train.py", 11, "TL001")]


@NEEDS_PROJECT
def test_a_package_relative_import_and_a_dependency_recorded(tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "pkg/__init__.py": "",
            "pkg/fp16_util.py": FP16_UTIL,
            "pkg/train.py": TRAIN_WITH_HELPER.replace("from fp16_util import", "from .fp16_util import"),
        },
    )
    assert both_ways(tmp_path, "pkg/fp16_util.py", "pkg/train.py") == []


MODELS = """
    import torch.nn as nn

    class ResidualBlock(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.block = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.InstanceNorm2d(c), nn.ReLU())

        def forward(self, x):
            return x + self.block(x)

    class GeneratorResNet(ResidualBlock):
        pass

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 4)

        def forward(self, x):
            return self.fc(x).softmax(dim=-1)
"""


@NEEDS_PROJECT
def test_a_class_of_a_sibling_module_is_a_model_through_its_bases(tmp_path):
    train = """
        import torch
        from models import GeneratorResNet

        def train(loader, epochs):
            for epoch in range(epochs):
                G_AB = GeneratorResNet(64)  # expect: TL003
                opt = torch.optim.Adam(G_AB.parameters())
                for x in loader:
                    opt.zero_grad()
                    G_AB(x).mean().backward()
                    opt.step()
    """
    write(tmp_path, {"pyproject.toml": "", "models.py": MODELS, "train.py": train})
    found = both_ways(tmp_path, "models.py", "train.py")
    assert ("train.py", 7, "TL003") in found


@NEEDS_PROJECT
def test_what_a_module_of_a_sibling_file_returns(tmp_path):
    train = """
        import torch
        import torch.nn.functional as F
        from models import Head

        def train(loader):
            head = Head()
            opt = torch.optim.SGD(head.parameters(), lr=0.1)
            for x, y in loader:
                opt.zero_grad()
                F.cross_entropy(head(x), y).backward()
                opt.step()
    """
    write(tmp_path, {"pyproject.toml": "", "models.py": MODELS, "train.py": train})
    assert both_ways(tmp_path, "models.py", "train.py") == [("train.py", 11, "TL012")]


@NEEDS_PROJECT
def test_a_helper_of_a_sibling_module_that_switches_to_eval_mode(tmp_path):
    utils = """
        def prepare(net):
            net.eval()
            return net
    """
    train = """
        import torch
        from utils import prepare

        def validate(model, loader):
            prepare(model)
            with torch.no_grad():
                return [model(x) for x in loader]

        def fit(model, loader, opt):
            for epoch in range(3):
                model.train()
                for x, y in loader:
                    opt.zero_grad()
                    torch.nn.functional.mse_loss(model(x), y).backward()
                    opt.step()
                validate(model, loader)
    """
    write(tmp_path, {"pyproject.toml": "", "utils.py": utils, "train.py": train})
    assert both_ways(tmp_path, "utils.py", "train.py") == []
    # The same helper without the switch: the evaluation runs in training mode.
    write(tmp_path, {"utils.py": utils.replace("net.eval()", "net.float()")})
    assert ("train.py", 8, "TL005") in both_ways(tmp_path, "utils.py", "train.py")


@NEEDS_PROJECT
def test_the_files_a_lint_read_are_its_dependencies(tmp_path):
    from torchlint.analysis.project import Projects

    from torchlint.engine.lint import lint_file

    write(tmp_path, {"pyproject.toml": "", "fp16_util.py": FP16_UTIL, "train.py": TRAIN_WITH_HELPER})
    result = lint_file(str(tmp_path / "train.py"), projects=Projects())
    assert result.findings == []
    assert [pathlib.Path(p).name for p in result.dependencies] == ["fp16_util.py"]


QNET = """
    from torch import nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Sequential(nn.Conv2d(4, 32, 8, stride=4), nn.ReLU())
            self.head = nn.Linear(512, 4)

        def forward(self, obs):
            return self.head(self.conv(obs).flatten(1))
"""

ACTING = """
    import torch
    from qnet import Model

    class Trainer:
        def __init__(self):
            self.model = Model()
            self.optimizer = torch.optim.Adam(self.model.parameters(), lr=2.5e-4)

        def sample(self, env):
            with torch.no_grad():
                for t in range(128):
                    env.step(self.model(env.obs).argmax(-1))

        def train(self, obs, target):
            loss = (self.model(obs) - target).pow(2).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

        def run(self, env):
            for update in range(1000):
                self.sample(env)
                self.train(env.obs, env.target)
"""


@NEEDS_PROJECT
def test_a_class_of_a_sibling_module_made_of_mode_independent_layers_is_the_same_in_both_modes(tmp_path):
    # The class's mode dependence is read from its file (ModeDependence resolving the class across
    # files, through callgraph.resolve_class once the project phase is on main).
    write(tmp_path, {"pyproject.toml": "", "qnet.py": QNET, "train.py": ACTING})
    assert both_ways(tmp_path, "qnet.py", "train.py") == []


def test_a_class_of_a_sibling_module_with_dropout_depends_on_the_mode(tmp_path):
    qnet = QNET.replace("nn.ReLU())", "nn.ReLU(), nn.Dropout(0.1))")
    write(tmp_path, {"pyproject.toml": "", "qnet.py": qnet, "train.py": ACTING})
    assert both_ways(tmp_path, "qnet.py", "train.py") == [("train.py", 13, "TL005")]
