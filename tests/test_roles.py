"""Roles from data flow (``torchlint.torchmodel.roles``): what an object is, told from how it is built
and used, its name only as a last resort."""

import ast
import textwrap

import pytest

from torchlint.analysis.context import FileContext
from torchlint.torchmodel.calls import call_events
from torchlint.torchmodel.events import EventKind
from torchlint.torchmodel.roles import Role, object_roles


def ctx_of(source):
    source = textwrap.dedent(source)
    return FileContext("train.py", source, ast.parse(source))


def use(ctx, name, line):
    """The expression ``name`` (a name or attribute chain) loaded on ``line``."""
    for node in ast.walk(ctx.tree):
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
            if node.lineno == line and ast.unparse(node) == name:
                return node
    raise AssertionError(f"no {name} on line {line}")


def test_objects_whose_parameters_feed_an_optimizer_are_models_whatever_their_names():
    ctx = ctx_of(
        """
        import itertools
        import torch
        from models import Encoder, GeneratorResNet
        G_AB = GeneratorResNet()
        G_BA = GeneratorResNet()
        E1 = Encoder()
        Enc1 = Encoder()
        opt_G = torch.optim.Adam(itertools.chain(G_AB.parameters(), G_BA.parameters()))
        opt_E = torch.optim.SGD(params=[p for _, p in E1.named_parameters()])
        Enc1.eval()
        G_AB(x), G_BA(x), E1(x), Enc1(x)
        """
    )
    roles = object_roles(ctx)
    assert [roles.role_of(use(ctx, name, 12), hint=False) for name in ("G_AB", "G_BA", "E1", "Enc1")] == [
        Role.MODEL
    ] * 4
    assert roles.role_of("G_AB", hint=False) is None  # a bare symbol: no flow, no table entry...
    assert roles.used_as["G_AB"] is Role.MODEL  # ...but its use says model


def test_a_bare_train_call_is_no_evidence_of_a_model():
    ctx = ctx_of(
        """
        from transformers import Trainer
        trainer = make_trainer()
        trainer.train()
        trainer
        """
    )
    assert object_roles(ctx).role_of(use(ctx, "trainer", 5), hint=False) is None


def test_a_class_of_the_file_with_a_step_method_is_not_an_optimizer():
    ctx = ctx_of(
        """
        import torch
        class WeightEMA(object):
            def __init__(self, model, ema_model):
                self.model, self.ema_model = model, ema_model
            def step(self):
                pass
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        ema_optimizer = WeightEMA(model, ema_model)
        optimizer.step()
        ema_optimizer.step()
        """
    )
    roles = object_roles(ctx)
    assert roles.role_of(use(ctx, "ema_optimizer", 11)) is Role.OTHER  # the name is no hint here
    assert roles.role_of("ema_optimizer") is Role.OTHER
    kinds = [
        getattr(call_events(ctx).classify(c), "kind", None) for c in ctx.calls if ast.unparse(c).endswith("step()")
    ]
    assert kinds == [EventKind.STEP, None]


@pytest.mark.parametrize(
    "base, role",
    [
        ("torch.optim.Optimizer", Role.OPTIMIZER),
        ("torch.optim.lr_scheduler.LambdaLR", Role.SCHEDULER),
        ("nn.Module", Role.MODEL),
        ("object", Role.OTHER),
        ("SomethingImported", None),  # a base this file does not show could be anything
    ],
)
def test_classes_of_the_file_are_what_their_bases_make_them(base, role):
    ctx = ctx_of(
        f"""
        import torch
        import torch.nn as nn
        from lib import SomethingImported
        class Thing({base}):
            pass
        class Child(Thing):
            pass
        thing = Child()
        thing
        """
    )
    assert object_roles(ctx).role_of(use(ctx, "thing", 10), hint=False) is role


def test_a_module_class_named_for_a_loss_is_a_criterion():
    ctx = ctx_of(
        """
        import torch.nn as nn
        class FocalLoss(nn.Module):
            pass
        loss_fn = FocalLoss()
        """
    )
    assert object_roles(ctx).symbol_role("loss_fn") is Role.CRITERION


def test_a_parameter_has_the_role_every_call_site_gives_it():
    ctx = ctx_of(
        """
        import torch
        import torch.nn as nn
        def train(net, crit, opt, loader):
            for x, y in loader:
                crit(net(x), y).backward()
                opt.step()
        def main(loader):
            net = nn.Linear(4, 2)
            train(net, nn.CrossEntropyLoss(), torch.optim.SGD(net.parameters(), lr=0.1), loader)
            train(net, nn.NLLLoss(), torch.optim.Adam(net.parameters()), loader)
        """
    )
    roles = object_roles(ctx)
    assert roles.role_of(use(ctx, "crit", 6), hint=False) is Role.CRITERION
    assert roles.role_of(use(ctx, "net", 6), hint=False) is Role.MODEL
    assert roles.role_of(use(ctx, "opt", 7), hint=False) is Role.OPTIMIZER


def test_call_sites_that_disagree_or_hide_the_argument_give_no_role():
    ctx = ctx_of(
        """
        import torch.nn as nn
        def run(thing):
            return thing
        run(nn.CrossEntropyLoss())
        run(nn.Linear(2, 2))
        def other(thing):
            return thing
        other(*args)
        """
    )
    roles = object_roles(ctx)
    assert roles.role_of(use(ctx, "thing", 4), hint=False) is None
    assert roles.role_of(use(ctx, "thing", 8), hint=False) is None


def test_constructor_arguments_reach_init_and_the_attributes_it_sets():
    ctx = ctx_of(
        """
        import torch
        import torch.nn as nn
        class Trainer:
            def __init__(self, network, loss=nn.MSELoss()):
                self.network = network
                self.loss = loss
            def fit(self, x, y):
                self.loss(self.network(x), y)
        Trainer(nn.Linear(2, 2))
        """
    )
    roles = object_roles(ctx)
    assert roles.role_of(use(ctx, "self.network", 9), hint=False) is Role.MODEL
    assert roles.role_of(use(ctx, "self.loss", 9), hint=False) is Role.CRITERION  # the default


def test_values_returned_by_functions_of_the_file():
    ctx = ctx_of(
        """
        import torch
        import torchvision
        def build(args):
            model = torchvision.models.resnet18()
            return model, torch.optim.SGD(model.parameters(), lr=args.lr)
        def make_scaler():
            return torch.amp.GradScaler()
        backbone, solver = build(args)
        grad_scaler = make_scaler()
        backbone, solver, grad_scaler
        """
    )
    roles = object_roles(ctx)
    found = [roles.role_of(use(ctx, name, 11), hint=False) for name in ("backbone", "solver", "grad_scaler")]
    assert found == [Role.MODEL, Role.OPTIMIZER, Role.SCALER]


def test_the_name_is_the_last_resort():
    ctx = ctx_of(
        """
        def step(optimizer, model):
            optimizer.step()
            model
        """
    )
    roles = object_roles(ctx)
    assert roles.role_of(use(ctx, "optimizer", 3), hint=False) is None
    assert roles.role_of(use(ctx, "optimizer", 3)) is Role.OPTIMIZER
    assert roles.role_of(use(ctx, "model", 4)) is Role.MODEL


def test_a_list_element_whose_role_depends_on_its_own_gives_up_instead_of_recursing(tmp_path):
    # A parser that returns an element of its argument and calls itself on elements of it (the shape
    # of Lightning's "optimizers and schedulers" parsing): each role question is answered by a fresh
    # flow walk, so the element's role asked again while it is being answered must come back unknown,
    # not recurse until Python's limit skips every rule of the file.
    from torchlint.engine.lint import lint_file

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "trainer.py").write_text(
        textwrap.dedent(
            """
            import torch


            class Trainer:
                def fit(self, model, loader):
                    optimizer, scheduler = self._parse(model.configure_optimizers())
                    self.train_loop(model, optimizer, loader, scheduler=scheduler)

                def train_loop(self, model, optimizer, loader, scheduler=None):
                    for batch in loader:
                        loss = model(batch).sum()
                        loss.backward()
                        optimizer.step()
                    if scheduler is not None:
                        scheduler["scheduler"].step()

                def _parse(self, output):
                    if isinstance(output, torch.optim.Optimizer):
                        return output, None
                    if isinstance(output, (list, tuple)):
                        if len(output) == 1:
                            return output[0][0], None
                        if len(output) == 2:
                            return self._parse(output[0])[0], self._parse(output[1])[1]
                    return None, None
            """
        )
    )
    result = lint_file(str(tmp_path / "trainer.py"))
    assert result.problems == []
    assert [(f.line, f.code) for f in result.findings] == [(14, "TL001")]


def test_library_schedule_builders_make_schedulers_whatever_the_name():
    ctx = ctx_of(
        """
        from transformers import get_cosine_schedule_with_warmup
        from transformers.optimization import Adafactor, AdafactorSchedule
        opt = Adafactor(model.parameters(), relative_step=True, warmup_init=True, lr=None)
        lr_fn = AdafactorSchedule(opt)
        warm = get_cosine_schedule_with_warmup(opt, 100, 1000)
        opt, lr_fn, warm
        """
    )
    roles = object_roles(ctx)
    assert roles.role_of(use(ctx, "opt", 7), hint=False) is Role.OPTIMIZER
    assert roles.role_of(use(ctx, "lr_fn", 7), hint=False) is Role.SCHEDULER
    assert roles.role_of(use(ctx, "warm", 7), hint=False) is Role.SCHEDULER
