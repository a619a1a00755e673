"""The PyTorch model across the files of a project: a helper imported from a sibling module is read
(its effects, what it returns, whether it builds a model), a class imported from one is what its
bases make it, a class of this file is a module through a base in another. Each project is
written into a temporary folder and linted by the real command, as a directory and file by file
(the imports resolved on disk next to the file): both must give the same findings."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

from project_helpers import write

from torchlint.analysis.project import Projects
from torchlint.engine.lint import lint_file

Finding = tuple[str, int, str, str]  # file name, line, code, first line of the message

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

UNCLEARED = "`opt.step()` applies gradients that are never cleared in the loop at line 7"


def lint(root: pathlib.Path, *targets: str) -> list[Finding]:
    """The findings of `torchlint TARGETS`, run in ``root``."""
    cmd = [sys.executable, "-m", "torchlint", "--format", "json", "--no-cache", "--exit-zero", *targets]
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=True)
    return sorted(
        (pathlib.Path(f["path"]).name, f["line"], f["code"], f["message"].splitlines()[0])
        for f in json.loads(proc.stdout)
    )


def both_ways(root: pathlib.Path, *files: str) -> list[Finding]:
    """The findings of a directory lint, checked equal to those of linting each file alone."""
    whole = lint(root, ".")
    one_by_one = sorted(f for name in files for f in lint(root, name))
    assert whole == one_by_one
    return whole


def test_a_helper_of_a_sibling_module_that_clears_the_gradients_clears_them(tmp_path):
    write(tmp_path, {"pyproject.toml": "", "fp16_util.py": FP16_UTIL, "train.py": TRAIN_WITH_HELPER})
    assert both_ways(tmp_path, "fp16_util.py", "train.py") == []


def test_a_helper_of_a_sibling_module_that_clears_nothing_does_not(tmp_path):
    helper = FP16_UTIL.replace("param.grad.zero_()", "print(param.grad.norm())").replace("param.grad.detach_()", "pass")
    write(tmp_path, {"pyproject.toml": "", "fp16_util.py": helper, "train.py": TRAIN_WITH_HELPER})
    assert both_ways(tmp_path, "fp16_util.py", "train.py") == [("train.py", 11, "TL001", UNCLEARED)]


def test_a_package_relative_import(tmp_path):
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
    write(tmp_path, {"pkg/fp16_util.py": FP16_UTIL.replace("param.grad.zero_()", "pass")})
    assert both_ways(tmp_path, "pkg/fp16_util.py", "pkg/train.py") == [("train.py", 11, "TL001", UNCLEARED)]


def test_the_files_a_lint_read_are_its_dependencies(tmp_path):
    write(tmp_path, {"pyproject.toml": "", "fp16_util.py": FP16_UTIL, "train.py": TRAIN_WITH_HELPER})
    result = lint_file(str(tmp_path / "train.py"), projects=Projects())
    assert result.findings == []
    assert [pathlib.Path(p).name for p in result.dependencies] == ["fp16_util.py"]


def test_a_helper_of_a_sibling_module_that_steps_the_optimizer(tmp_path):
    utils = """
        def update(optimizer, scheduler=None):
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
    """
    train = """
        import torch
        import torch.nn.functional as F
        from utils import update

        def train(model, loader):
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                F.mse_loss(model(x), y).backward()
                update(opt)
    """
    write(tmp_path, {"pyproject.toml": "", "utils.py": utils, "train.py": train})
    assert both_ways(tmp_path, "utils.py", "train.py") == [
        ("train.py", 10, "TL001", "`update(opt)` applies gradients that are never cleared in the loop at line 8")
    ]
    # The same loop clearing first is right: the helper's step is an update like `opt.step()`.
    clearing = "opt.zero_grad()\n                F.mse_loss"
    write(tmp_path, {"train.py": train.replace("F.mse_loss", clearing)})
    assert both_ways(tmp_path, "utils.py", "train.py") == []


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

        fit(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.1)), loader, opt)
    """
    write(tmp_path, {"pyproject.toml": "", "utils.py": utils, "train.py": train})
    assert both_ways(tmp_path, "utils.py", "train.py") == []
    # The same helper without the switch: the evaluation runs in training mode.
    write(tmp_path, {"utils.py": utils.replace("net.eval()", "net.float()")})
    assert [f[:3] for f in both_ways(tmp_path, "utils.py", "train.py")] == [("train.py", 8, "TL005")]


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


def test_a_class_of_a_sibling_module_is_a_model_through_its_bases(tmp_path):
    train = """
        import torch
        from models import GeneratorResNet

        def train(loader, epochs):
            for epoch in range(epochs):
                G_AB = GeneratorResNet(64)
                opt = torch.optim.Adam(G_AB.parameters())
                for x in loader:
                    opt.zero_grad()
                    G_AB(x).mean().backward()
                    opt.step()
    """
    write(tmp_path, {"pyproject.toml": "", "models.py": MODELS, "train.py": train})
    found = both_ways(tmp_path, "models.py", "train.py")
    assert [f[:3] for f in found] == [("train.py", 7, "TL003"), ("train.py", 8, "TL004")]
    assert found[0][3] == (
        "`GeneratorResNet(...)` builds a new model in every iteration of the loop at line 6 (`for epoch in range(epochs)`)"
    )


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
    assert both_ways(tmp_path, "models.py", "train.py") == [
        (
            "train.py",
            11,
            "TL012",
            "cross-entropy is given probabilities: `head(x)` is already softmax output (softmax at models.py:21)",
        )
    ]


def test_a_class_of_this_file_is_a_module_through_a_base_in_another_file(tmp_path):
    files = {
        "pyproject.toml": "",
        "nets/__init__.py": "",
        "nets/base.py": """
            import torch.nn as nn

            class BaseNet(nn.Module):
                pass
        """,
        "nets/mlp.py": """
            import torch.nn as nn
            import torch.nn.functional as F
            from .base import BaseNet

            class MLP(BaseNet):
                def __init__(self, n):
                    super().__init__()
                    self.fc = nn.Linear(n, n)
                    self.blocks = [nn.Linear(n, n) for _ in range(3)]

                def forward(self, x):
                    return F.dropout(self.fc(x), 0.5)
        """,
    }
    write(tmp_path, files)
    assert [f[:3] for f in both_ways(tmp_path, "nets/base.py", "nets/mlp.py")] == [
        ("mlp.py", 10, "TL013"),
        ("mlp.py", 13, "TL011"),
    ]
    # A base that is no module (a plain class of the other file): nothing to say.
    write(tmp_path, {"nets/base.py": "class BaseNet:\n    pass\n"})
    assert both_ways(tmp_path, "nets/base.py", "nets/mlp.py") == []


def test_a_factory_of_a_sibling_module_builds_a_model(tmp_path):
    factory = """
        from models import GeneratorResNet

        def build(channels):
            return GeneratorResNet(channels)
    """
    train = """
        import torch
        from factory import build

        def train(loader):
            for x in loader:
                net = build(64)
                opt = torch.optim.Adam(net.parameters())
                opt.zero_grad()
                net(x).mean().backward()
                opt.step()
    """
    write(tmp_path, {"pyproject.toml": "", "models.py": MODELS, "factory.py": factory, "train.py": train})
    found = both_ways(tmp_path, "models.py", "factory.py", "train.py")
    assert [f[:3] for f in found] == [("train.py", 7, "TL003"), ("train.py", 8, "TL004")]
    assert found[0][3] == "`build(...)` builds a new model in every iteration of the loop at line 6 (`for x in loader`)"


def test_a_class_of_a_sibling_module_with_a_step_method_is_no_optimizer(tmp_path):
    ema = """
        import torch

        class WeightEMA:
            def __init__(self, model, decay=0.999):
                self.model = model
                self.decay = decay

            def step(self):
                pass
    """
    train = """
        import torch
        import torch.nn.functional as F
        from ema import WeightEMA

        def train(model, loader):
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            ema_optimizer = WeightEMA(model)
            for x, y in loader:
                opt.zero_grad()
                F.mse_loss(model(x), y).backward()
                opt.step()
                ema_optimizer.step()
    """
    write(tmp_path, {"pyproject.toml": "", "ema.py": ema, "train.py": train})
    assert both_ways(tmp_path, "ema.py", "train.py") == []
    # The same class deriving from torch's Optimizer is one, and it steps gradients it never clears.
    write(
        tmp_path,
        {"ema.py": ema.replace("class WeightEMA:", "class WeightEMA(torch.optim.Optimizer):")},
    )
    assert [f[:3] for f in both_ways(tmp_path, "ema.py", "train.py")] == [("train.py", 13, "TL001")]


LOSSES = """
    import torch.nn.functional as F

    def scaled_loss(out, y, accum):
        return F.cross_entropy(out, y) / accum

    class ComputeLoss:
        def __init__(self, accum):
            self.accum = accum

        def __call__(self, out, y):
            return F.cross_entropy(out, y) / self.accum
"""


def test_a_loss_divided_by_a_helper_or_a_callable_of_a_sibling_module(tmp_path):
    train = """
        from losses import ComputeLoss, scaled_loss

        def train(model, loader, opt, accum):
            for i, (x, y) in enumerate(loader):
                loss = scaled_loss(model(x), y, accum)
                loss.backward()
                if (i + 1) % accum == 0:
                    opt.step()
                    opt.zero_grad()

        def train_yolo_style(model, loader, opt, accum):
            compute_loss = ComputeLoss(accum)
            for i, (x, y) in enumerate(loader):
                loss = compute_loss(model(x), y)
                loss.backward()
                if (i + 1) % accum == 0:
                    opt.step()
                    opt.zero_grad()
    """
    write(tmp_path, {"pyproject.toml": "", "losses.py": LOSSES, "train.py": train})
    assert both_ways(tmp_path, "losses.py", "train.py") == []
    # Neither divides: each accumulated loss is N times too large.
    write(tmp_path, {"losses.py": LOSSES.replace(" / accum", "").replace(" / self.accum", "")})
    message = "`loss.backward()` accumulates gradients, but `loss` is not divided by the number of accumulated steps"
    assert both_ways(tmp_path, "losses.py", "train.py") == [
        ("train.py", 7, "TL009", message),
        ("train.py", 16, "TL009", message),
    ]


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


def test_a_class_of_a_sibling_module_made_of_mode_independent_layers_is_the_same_in_both_modes(tmp_path):
    # The class's mode dependence is read from its file (ModeDependence resolves the class across files).
    write(tmp_path, {"pyproject.toml": "", "qnet.py": QNET, "train.py": ACTING})
    assert both_ways(tmp_path, "qnet.py", "train.py") == []


def test_a_class_of_a_sibling_module_with_dropout_depends_on_the_mode(tmp_path):
    qnet = QNET.replace("nn.ReLU())", "nn.ReLU(), nn.Dropout(0.1))")
    write(tmp_path, {"pyproject.toml": "", "qnet.py": qnet, "train.py": ACTING})
    assert [f[:3] for f in both_ways(tmp_path, "qnet.py", "train.py")] == [("train.py", 13, "TL005")]


def test_a_lint_that_reuses_what_another_lint_worked_out_lists_the_files_it_rests_on(tmp_path):
    """b2.py's lint reuses the factories of a.py worked out for b1.py's lint (a.py stays parsed, its
    facts cached): c.py, read to learn that ``Net`` is a model, is a dependency of both."""
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "c.py": "import torch.nn as nn\n\nclass Net(nn.Module):\n    pass\n",
            "a.py": "from c import Net\n\ndef f():\n    return Net()\n\ndef g():\n    return Net()\n",
            "b1.py": "from a import f\n\nfor x in range(3):\n    model = f()\n",
            "b2.py": "from a import g\n\nfor x in range(3):\n    model = g()\n",
        },
    )
    projects = Projects()
    for name in ("b1.py", "b2.py"):
        result = lint_file(str(tmp_path / name), projects=projects)
        assert sorted(pathlib.Path(p).name for p in result.dependencies) == ["a.py", "c.py"], name


SCHEDULES = """
    import torch

    class WarmupCosineSchedule(object):
        def __init__(self, optimizer, ref_lr):
            self.optimizer, self.ref_lr, self._step = optimizer, ref_lr, 0

        def step(self):
            self._step += 1
            for group in self.optimizer.param_groups:
                group["lr"] = self.ref_lr * min(1.0, self._step / 100)

    class WarmupLR(torch.optim.lr_scheduler.LambdaLR):
        def __init__(self, optimizer):
            super().__init__(optimizer, lambda step: min(1.0, step / 100))
"""

INIT_OPT = """
    import torch
    from schedules import {cls}

    def init_opt(model):
        optimizer = torch.optim.AdamW(model.parameters())
        return optimizer, {cls}(optimizer{args})
"""

TRAIN_WITH_INIT_OPT = """
    from utils import init_opt

    def train(model, loader):
        optimizer, scheduler = init_opt(model)
        for x in loader:
            scheduler.step()
            model(x).mean().backward()
            optimizer.step()
            optimizer.zero_grad()
"""


def test_a_project_schedule_class_without_a_torch_base_steps_first_by_contract(tmp_path):
    init_opt = INIT_OPT.format(cls="WarmupCosineSchedule", args=", ref_lr=1e-3")
    write(
        tmp_path,
        {"pyproject.toml": "", "schedules.py": SCHEDULES, "utils.py": init_opt, "train.py": TRAIN_WITH_INIT_OPT},
    )
    assert both_ways(tmp_path, "schedules.py", "utils.py", "train.py") == []


def test_a_project_schedule_class_with_a_torch_base_is_reported(tmp_path):
    init_opt = INIT_OPT.format(cls="WarmupLR", args="")
    write(
        tmp_path,
        {"pyproject.toml": "", "schedules.py": SCHEDULES, "utils.py": init_opt, "train.py": TRAIN_WITH_INIT_OPT},
    )
    assert both_ways(tmp_path, "schedules.py", "utils.py", "train.py") == [
        ("train.py", 7, "TL015", "`scheduler.step()` runs before `optimizer.step()` (line 9) in the same iteration")
    ]


def test_a_helper_of_a_sibling_module_that_switches_a_copy_of_its_argument_to_eval(tmp_path):
    attacks = """
        import copy
        import torch

        def input_gradient_sign(net, images, targets):
            net = copy.deepcopy(net)
            net.eval()
            images = images.clone().requires_grad_(True)
            loss = torch.nn.functional.cross_entropy(net(images), targets)
            loss.backward()
            return images.grad.sign()
    """
    train = """
        import torch
        import torchvision
        from attacks import input_gradient_sign

        model = torchvision.models.resnet18(num_classes=10)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(30):
            model.train()
            for step, (x, y) in enumerate(train_loader):
                opt.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(x), y)
                if step % 2 == 0:
                    x_adv = x + 0.03 * input_gradient_sign(model, x, y)
                    loss = loss + torch.nn.functional.cross_entropy(model(x_adv), y)
                loss.backward()
                opt.step()
            model.eval()
            with torch.no_grad():
                correct = sum((model(x).argmax(1) == y).sum() for x, y in val_loader)
    """
    write(tmp_path, {"pyproject.toml": "", "attacks.py": attacks, "train.py": train})
    # The helper switches its own copy: the model being trained stays in train mode.
    assert both_ways(tmp_path, "attacks.py", "train.py") == []
    # Moving the argument hands back the same model: that one is switched and never switched back.
    write(tmp_path, {"attacks.py": attacks.replace("copy.deepcopy(net)", "net.to(images.device)")})
    assert both_ways(tmp_path, "attacks.py", "train.py") == [
        (
            "train.py",
            14,
            "TL007",
            "`input_gradient_sign(model, x, y)` switches the model to eval mode inside the training loop at line 10",
        )
    ]


EVAL_CONTEXT = """
    import contextlib
    import torch

    @contextlib.contextmanager
    def evaluating(*nets):
        was = [n.training for n in nets]
        try:
            with torch.no_grad():
                yield [n.eval() for n in nets]
        finally:
            for n, mode in zip(nets, was):
                n.train(mode)
"""

TRAIN_THEN_VALIDATE_IN = """
    import torch
    from netutils import evaluating

    def fit(model, optimizer, train_loader, val_loader, criterion):
        for epoch in range(10):
            model.train()
            for x, y in train_loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
            with evaluating(model):
                for x, y in val_loader:
                    print(criterion(model(x), y).item())
"""


def test_a_context_manager_of_a_sibling_module_that_yields_under_no_grad(tmp_path):
    write(tmp_path, {"pyproject.toml": "", "netutils.py": EVAL_CONTEXT, "train.py": TRAIN_THEN_VALIDATE_IN})
    assert both_ways(tmp_path, "netutils.py", "train.py") == []


def test_a_context_manager_of_a_sibling_module_that_leaves_autograd_on(tmp_path):
    helper = EVAL_CONTEXT.replace("with torch.no_grad():", "if True:")
    write(tmp_path, {"pyproject.toml": "", "netutils.py": helper, "train.py": TRAIN_THEN_VALIDATE_IN})
    found = both_ways(tmp_path, "netutils.py", "train.py")
    assert [(name, line, code) for name, line, code, _ in found] == [("train.py", 14, "TL006")]


METRICS = """
    import torch
    import torch.nn as nn

    class EdgeAccuracy(nn.Module):
        def __init__(self, threshold=0.5):
            super().__init__()
            self.threshold = threshold

        def __call__(self, labels, outputs):
            return ((outputs > self.threshold) == (labels > self.threshold)).float().mean()

    class LearnedScore(nn.Module):
        def __init__(self, channels=1):
            super().__init__()
            self.head = nn.Linear(channels, 1)

        def forward(self, outputs):
            return self.head(outputs.flatten(1)).mean()
"""

RUNNER = """
    import torch
    from metrics import EdgeAccuracy, LearnedScore

    class Runner:
        def __init__(self, model, metric_config):
            self.model = model
            self.metric = {metric}

        def evaluate(self, val_loader, cached):
            self.model.eval()
            for images, edges in val_loader:
                score = self.metric(edges, cached)
                outputs = self.model(images)
                print(score.item(), outputs.mean().item())

    runner = Runner(torch.load("model.pt"), {"threshold": 0.5})
    runner.evaluate(val_loader, None)
"""


def test_a_parameterless_metric_module_of_a_sibling_module_is_not_where_the_graph_is_recorded(tmp_path):
    runner = RUNNER.replace("{metric}", "EdgeAccuracy(**metric_config).to('cuda')")
    write(tmp_path, {"pyproject.toml": "", "metrics.py": METRICS, "runner.py": runner})
    found = both_ways(tmp_path, "metrics.py", "runner.py")
    assert [(name, line, code) for name, line, code, _ in found] == [("runner.py", 14, "TL006")]
    assert found[0][3].startswith("`self.model(...)` evaluates with autograd on in `evaluate()`")


def test_a_metric_module_with_a_learned_layer_records_a_graph(tmp_path):
    runner = RUNNER.replace("{metric}", "LearnedScore(**metric_config).to('cuda')")
    write(tmp_path, {"pyproject.toml": "", "metrics.py": METRICS, "runner.py": runner})
    found = both_ways(tmp_path, "metrics.py", "runner.py")
    assert [(name, line, code) for name, line, code, _ in found] == [("runner.py", 13, "TL006")]
    assert found[0][3].startswith("`self.metric(...)` evaluates with autograd on in `evaluate()`")


STAR_HELPERS = """
    import torch
    import torch.nn.functional as F

    def batches(data, size):
        for i in range(0, len(data), size):
            yield data[i : i + size]
"""

STAR_EVALUATE = """
    import torch.nn as nn
    from star_helpers import *

    model = nn.LSTM(10, 10)

    def evaluate(data):
        model.eval()
        with torch.no_grad():
            return sum(F.mse_loss(model(x)[0], x).item() for x in batches(data, 8))

    for epoch in range(3):
        model.train()
        train_epoch(model)
        evaluate(valid)
"""


def test_torch_bound_only_through_a_star_import_of_a_project_module(tmp_path):
    # `torch` comes from `from star_helpers import *`: `torch.no_grad()` is known, evaluation is fine.
    write(tmp_path, {"pyproject.toml": "", "star_helpers.py": STAR_HELPERS, "evaluate.py": STAR_EVALUATE})
    assert both_ways(tmp_path, "star_helpers.py", "evaluate.py") == []
    # A module's `__all__` limits what its star import brings: `torch` stays unknown, so the
    # `with torch.no_grad():` block cannot be judged and nothing is reported either ...
    write(tmp_path, {"star_helpers.py": STAR_HELPERS + '    __all__ = ["batches"]\n'})
    assert both_ways(tmp_path, "star_helpers.py", "evaluate.py") == []
    # ... while evaluation outside any grad switch, with `torch` resolved, is reported.
    unguarded = STAR_EVALUATE.replace("        with torch.no_grad():\n            return", "        return")
    write(tmp_path, {"star_helpers.py": STAR_HELPERS, "evaluate.py": unguarded})
    assert both_ways(tmp_path, "star_helpers.py", "evaluate.py") == [
        (
            "evaluate.py",
            9,
            "TL006",
            "`model(...)` evaluates with autograd on in `evaluate()`, called at line 14 outside any no-grad block",
        )
    ]
    result = lint_file(str(tmp_path / "evaluate.py"), projects=Projects())
    assert [pathlib.Path(p).name for p in result.dependencies] == ["star_helpers.py"]
