"""The shared model of training code (``torchlint/torchmodel/``): roles, events, iterations, clearing,
accumulation and loss division -- the facts TL001/TL002/TL009 and other rules build on."""

import ast
import textwrap

import pytest

from torchlint.analysis.callgraph import resolve_local_call
from torchlint.analysis.context import FileContext
from torchlint.torchmodel.accumulation import gradient_accumulation
from torchlint.torchmodel.calls import call_events
from torchlint.torchmodel.clearing import clearing
from torchlint.torchmodel.division import loss_is_divided
from torchlint.torchmodel.events import EventKind, guard_key
from torchlint.torchmodel.iterations import iterations
from torchlint.torchmodel.roles import Role, object_roles
from torchlint.torchmodel.walk import MAX_INLINED_CALLS, event_walker


def model_of(source):
    source = textwrap.dedent(source)
    return FileContext("train.py", source, ast.parse(source))


def kinds(events):
    return [e.kind.value for e in events]


def only(units, owner_type):
    found = [u for u in units if isinstance(u.owner, owner_type)]
    assert len(found) == 1, found
    return found[0]


# ----- roles ------------------------------------------------------------------------------------------


def test_roles_from_constructors_prepare_and_names():
    ctx = model_of(
        """
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        net = DDP(torch.nn.Linear(2, 2).cuda())
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        sched = torch.optim.lr_scheduler.StepLR(opt, 10)
        scaler = torch.cuda.amp.GradScaler()
        model, optimizer = accelerator.prepare(net, opt)
        """
    )
    assert object_roles(ctx).role_of("net") is Role.MODEL and object_roles(ctx).role_of("opt") is Role.OPTIMIZER
    assert object_roles(ctx).role_of("sched") is Role.SCHEDULER and object_roles(ctx).role_of("scaler") is Role.SCALER
    assert object_roles(ctx).role_of("model") is Role.MODEL and object_roles(ctx).role_of("optimizer") is Role.OPTIMIZER
    assert (
        object_roles(ctx).role_of("self.optimizer_g") is Role.OPTIMIZER
        and object_roles(ctx).role_of("optD") is Role.OPTIMIZER
    )
    assert object_roles(ctx).role_of("netG") is Role.MODEL and object_roles(ctx).role_of("options") is None


def test_optimizer_models_from_parameters_argument():
    ctx = model_of(
        """
        import torch
        optD = torch.optim.Adam(netD.parameters())
        self.opt = torch.optim.AdamW([{"params": self.backbone.parameters()}, {"params": self.head.parameters()}])
        opt_any = torch.optim.SGD(param_groups, lr=0.1)
        """
    )
    assert object_roles(ctx).optimizer_models["optD"] == {"netD"}
    assert object_roles(ctx).optimizer_models["self.opt"] == {"self.backbone", "self.head"}
    assert "opt_any" not in object_roles(ctx).optimizer_models


# ----- events -------------------------------------------------------------------------------------------


def test_events_in_order_with_guards_loops_and_via():
    ctx = model_of(
        """
        import torch
        def update(opt):
            opt.step()
        for x in loader:
            if amp:
                scaler.scale(model(x)).backward()
            else:
                model(x).backward()
            for p in model.parameters():
                p.grad = torch.zeros_like(p)
            update(optimizer)
            optimizer.zero_grad()
        """
    )
    loop = ctx.nodes(ast.For)[0]
    events = iterations(ctx).loop_events[loop]
    assert kinds(events) == ["backward", "backward", "clear_grad", "step", "zero_grad"]
    assert [guard_key(ctx, g) for g in events[0].guards] == [("amp", True)]
    assert [guard_key(ctx, g) for g in events[1].guards] == [("amp", False)]
    assert events[2].loops == (ctx.nodes(ast.For)[1],)
    assert events[3].via and events[3].via[0].lineno == 12 and events[3].site.lineno == 12
    assert clearing(ctx).canonical_target(events[3]) == "optimizer"  # the helper's parameter, mapped to the argument


def test_step_closure_runs_inside_the_step_and_defs_in_loop_bodies_resolve():
    ctx = model_of(
        """
        for i in range(10):
            def closure():
                optimizer.zero_grad()
                loss = model(x)
                loss.backward()
                return loss
            optimizer.step(closure)
            def _backward(l):
                l.backward()
            _backward(model(x))
        """
    )
    events = iterations(ctx).loop_events[ctx.nodes(ast.For)[0]]
    assert kinds(events) == ["zero_grad", "backward", "step", "backward"]
    assert events[0].via[0].lineno == 8


def test_grad_detach_alone_is_not_clearing():
    ctx = model_of(
        """
        for p in params:
            p.grad.detach_()
            p.grad.zero_()
        """
    )
    assert kinds(iterations(ctx).loop_events[ctx.nodes(ast.For)[0]]) == ["clear_grad"]


def test_guard_key_folds_not_and_repeated_tests():
    ctx = model_of(
        """
        if not self.flag:
            a()
        if self.flag:
            b()
        """
    )
    first, second = ctx.nodes(ast.If)
    assert guard_key(ctx, (first.test, True)) == guard_key(ctx, (second.test, False)) == ("self.flag", False)


# ----- iterations -----------------------------------------------------------------------------------


def test_step_is_judged_by_innermost_loop_with_a_backward():
    ctx = model_of(
        """
        for epoch in range(3):
            for x in loader:
                model(x).backward()
                for opt in optimizers:
                    opt.step()
        """
    )
    epoch_loop, batch_loop, opt_loop = ctx.nodes(ast.For)
    units = iterations(ctx).step_units
    assert [u.owner for u in units] == [batch_loop]
    assert units[0].is_loop and kinds([units[0].events[i] for i in units[0].steps]) == ["step"]


def test_per_iteration_functions_are_units_but_tests_and_loss_utilities_are_not():
    ctx = model_of(
        """
        class T:
            def run_step(self):
                loss = self.model(next(self.it))
                loss.backward()
                self.optimizer.step()
            def __call__(self, loss, optimizer):
                loss.backward()
                optimizer.step()
        def test_one_step():
            loss = model(x)
            loss.backward()
            opt.step()
        """
    )
    assert [u.owner.name for u in iterations(ctx).step_units] == ["run_step"]


def test_a_step_reached_from_a_loop_is_judged_by_the_loop_not_the_helper():
    ctx = model_of(
        """
        def train_step(batch):
            loss = model(batch)
            loss.backward()
            optimizer.step()
        for batch in loader:
            train_step(batch)
        """
    )
    assert [type(u.owner).__name__ for u in iterations(ctx).step_units] == ["For"]


# ----- clearing -------------------------------------------------------------------------------------


def test_clears_judges_each_optimizer_on_its_own():
    ctx = model_of(
        """
        import torch
        optD = torch.optim.Adam(netD.parameters())
        optG = torch.optim.Adam(netG.parameters())
        for real in loader:
            netD.zero_grad()
            netD(real).mean().backward()
            optD.step()
            optG.zero_grad()
            netG(real).mean().backward()
            optG.step()
        """
    )
    unit = iterations(ctx).step_units[0]
    stepped = clearing(ctx).stepped_optimizers(unit)
    assert stepped == {"optD", "optG"}
    clear_d, _, step_d, clear_g, _, step_g = unit.events
    assert clearing(ctx).clears(clear_d, step_d, stepped) and not clearing(ctx).clears(clear_d, step_g, stepped)
    assert clearing(ctx).clears(clear_g, step_g, stepped, strict=True) and not clearing(ctx).clears(
        clear_g, step_d, stepped
    )


def test_strict_clearing_needs_certainty():
    ctx = model_of(
        """
        for x in loader:
            model(x).backward()
            for p in frozen:
                p.grad = None
            something.zero_grad()
            optimizer.step()
        """
    )
    unit = iterations(ctx).step_units[0]
    _, clear_grad, unknown, step = unit.events
    stepped = clearing(ctx).stepped_optimizers(unit)
    assert clearing(ctx).clears(clear_grad, step, stepped) and not clearing(ctx).clears(
        clear_grad, step, stepped, strict=True
    )
    assert clearing(ctx).clears(unknown, step, stepped) and not clearing(ctx).clears(
        unknown, step, stepped, strict=True
    )


# ----- accumulation and loss division ------------------------------------------------------------------


@pytest.mark.parametrize(
    "test, expected",
    [
        ("(i + 1) % accum == 0", True),
        ("not (step + 1) % args.gradient_accumulation_steps", True),
        ("self.accum_count >= self.accum_steps", True),
        ("need_update", True),  # assigned from a modulo below
        ("'%d' % i", False),
        ("epoch > 3", False),
    ],
)
def test_accumulation_tests(test, expected):
    ctx = model_of(
        f"""
        def f(i, step, accum, args, epoch):
            need_update = i == last or (i + 1) % accum == 0
            if {test}:
                pass
        """
    )
    assert gradient_accumulation(ctx).is_accumulation_test(ctx.nodes(ast.If)[0].test) is expected


@pytest.mark.parametrize(
    "lines, divided",
    [
        (["loss = criterion(out, y)", "loss.backward()"], False),
        (["loss = criterion(out, y) / n", "loss.backward()"], True),
        (["loss = criterion(out, y)", "loss /= n", "loss.backward()"], True),
        (["loss = criterion(out, y)", "(loss / n).backward()"], True),
        (["loss = criterion(out, y)", "scaler.scale(loss / n).backward()"], True),
        (["loss = criterion(out, y).div(n)", "loss.backward()"], True),
        (["loss = criterion(out, y)", "loss.backward()", "loss = loss / n"], False),  # after the backward
        (["loss = criterion(out, y)", "shown = loss.item() / n", "loss.backward()"], False),
        (["loss = helper()", "loss.backward()"], True),
        (["loss, aux = helper_pair()", "loss.backward()"], True),
        (["loss = outputs.loss", "accelerator.backward(loss)"], False),
    ],
)
def test_loss_is_divided(lines, divided):
    body = "\n".join("    " + line for line in lines)
    ctx = model_of(
        "def helper():\n    return model(x) / n\n"
        "def helper_pair():\n    l = model(x)\n    l /= n\n    return l, 0\n"
        f"def train(criterion, out, y, n):\n{body}\n"
    )
    backward = next(e for e in event_walker(ctx).events(ctx.functions["train"][0].body) if e.kind is EventKind.BACKWARD)
    assert loss_is_divided(ctx, backward) is divided


def test_loss_division_followed_through_a_closure_parameter():
    ctx = model_of(
        """
        for i, (x, y) in enumerate(loader):
            def _forward():
                _loss = model(x, y)
                _loss /= accum
                return _loss, None
            def _backward(_loss):
                _loss.backward()
            loss, _ = _forward()
            _backward(loss)
            if (i + 1) % accum == 0:
                opt.step()
        """
    )
    unit = iterations(ctx).step_units[0]
    backward = next(e for e in unit.events if e.kind is EventKind.BACKWARD)
    assert loss_is_divided(ctx, backward)
    ((found, evidence),) = gradient_accumulation(ctx).accumulated_backwards(unit, unit.steps[0])
    assert found is backward and evidence.kind == "guard" and evidence.count() == "accum"


def test_accumulation_evidence_kinds():
    ctx = model_of(
        """
        for it in range(iters):
            for micro_step in range(grad_accum):
                model(next(batches)).backward()
            opt.step()
            opt.zero_grad()
        for i, x in enumerate(loader):
            model(x).backward()
            if i % k != 0:
                continue
            opt.step()
            opt.zero_grad()
        for i, x in enumerate(loader):
            opt.zero_grad()
            model(x).backward()
            if i % 2 == 0:
                opt.step()
        """
    )
    micro_unit, exit_unit, skipping_unit = iterations(ctx).step_units
    ((_, micro),) = gradient_accumulation(ctx).accumulated_backwards(micro_unit, micro_unit.steps[0])
    assert micro.kind == "micro_loop" and micro.count() == "grad_accum"
    ((_, exit_),) = gradient_accumulation(ctx).accumulated_backwards(exit_unit, exit_unit.steps[0])
    assert exit_.kind == "exit" and isinstance(exit_.node, ast.Continue) and exit_.count() == "k"
    # Cleared on every iteration: steps are skipped, nothing accumulates.
    assert gradient_accumulation(ctx).accumulated_backwards(skipping_unit, skipping_unit.steps[0]) == []


def test_loss_scale_attribute_set_in_another_method():
    ctx = model_of(
        """
        class Trainer:
            def __init__(self, accum):
                self.scale = 1.0 / accum
            def step(self, batch):
                loss = self.model(batch) * self.scale
                loss.backward()
        """
    )
    backward = next(
        e for e in event_walker(ctx).function_events(ctx.functions["step"][0]) if e.kind is EventKind.BACKWARD
    )
    assert loss_is_divided(ctx, backward)


def test_model_zero_grad_on_wrapped_or_parent_module_clears():
    ctx = model_of(
        """
        import torch
        import torch_xla.core.xla_model as xm
        class T:
            def __init__(self):
                self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
                self.opt_head = torch.optim.SGD(self.model.head.parameters(), lr=0.1)
            def fit(self):
                for x in self.loader:
                    self.model.module.zero_grad()
                    self.model(x).backward()
                    xm.optimizer_step(self.opt)
                    self.model.zero_grad()
                    self.other.zero_grad()
                    self.opt_head.step()
        """
    )
    unit = iterations(ctx).step_units[0]
    stepped = clearing(ctx).stepped_optimizers(unit)
    clear_wrapped, _, step, clear_parent, clear_other, step_head = unit.events
    assert step.kind is EventKind.STEP and step.target == "self.opt"
    assert clearing(ctx).clears(clear_wrapped, step, stepped, strict=True)
    assert clearing(ctx).clears(clear_parent, step_head, stepped, strict=True)
    assert not clearing(ctx).clears(clear_other, step, stepped, strict=True)


def test_lightning_optimizers_unpacking_takes_parameters_from_configure_optimizers():
    ctx = model_of(
        """
        import torch
        import lightning as L
        class GAN(L.LightningModule):
            def training_step(self, batch, batch_idx):
                opt_g, opt_d = self.optimizers()
            def configure_optimizers(self):
                g = torch.optim.Adam(self.generator.parameters())
                d = torch.optim.Adam(self.discriminator.parameters())
                return [g, d], []
        """
    )
    assert object_roles(ctx).optimizer_models["opt_g"] == {"self.generator"}
    assert object_roles(ctx).optimizer_models["opt_d"] == {"self.discriminator"}


def test_walks_are_bounded_when_helpers_call_many_helpers():
    # 12 helpers that all call each other: following every call 4 deep would mean 11**4 bodies.
    helpers = "\n".join(
        f"def f{i}(x):\n"
        + "".join(f"    f{j}(x)\n" for j in range(12) if j != i)
        + "    x.backward()\n    opt.step()\n"
        for i in range(12)
    )
    ctx = model_of(helpers + "for x in loader:\n    f0(x)\n")
    events = iterations(ctx).loop_events[ctx.nodes(ast.For)[0]]
    assert 0 < len(events) <= 2 * (MAX_INLINED_CALLS + 1)


@pytest.mark.parametrize("parts, divided", [(5, False), (12, False), (200, True)])
def test_long_reassignment_chains_are_traced_in_bounded_time(parts, divided):
    # A loss summed from parts is traced to its start; a chain longer than the trace depth
    # counts as divided (silence over guessing). Either way in bounded time.
    chain = "".join(f"        loss = loss + part{i}\n" for i in range(parts))
    ctx = model_of(
        "def train(model, loader):\n    for x in loader:\n        loss = model(x)\n"
        + chain
        + "        loss.backward()\n"
    )
    backward = next(e for e in iterations(ctx).loop_events[ctx.nodes(ast.For)[0]] if e.kind is EventKind.BACKWARD)
    assert loss_is_divided(ctx, backward) is divided


@pytest.mark.parametrize("scaled_value, divided", [("loss / accum", True), ("loss", False)])
def test_loss_bound_by_a_with_statement(scaled_value, divided):
    ctx = model_of(
        f"""
        def train(model, loader, optimizer, accum):
            for i, x in enumerate(loader):
                loss = model(x)
                with amp.scale_loss({scaled_value}, optimizer) as scaled_loss:
                    scaled_loss.backward()
                if (i + 1) % accum == 0:
                    optimizer.step()
                    optimizer.zero_grad()
        """
    )
    unit = iterations(ctx).step_units[0]
    ((backward, evidence),) = gradient_accumulation(ctx).accumulated_backwards(unit, unit.steps[0])
    assert loss_is_divided(ctx, backward) is divided


def test_cyclic_local_base_classes_terminate():
    ctx = model_of(
        """
        class A(B):
            def f(self):
                opt_a, opt_b = self.optimizers()
                self.g()
        class B(A):
            pass
        for x in y:
            A().f()
        """
    )
    call = next(c for c in ctx.calls if getattr(c.func, "attr", None) == "g")
    assert (
        resolve_local_call(ctx, call) is None
        and iterations(ctx).step_units == []
        and object_roles(ctx).optimizer_models == {}
    )


def test_train_mode_keyword_false_is_an_eval_switch():
    import ast as _ast

    from torchlint.analysis.context import FileContext

    source = "model.train(mode=False)\nmodel.train(mode=True)\nmodel.train(False)\nmodel.train(flag)\nmodel.train()\n"
    ctx = FileContext("m.py", source, _ast.parse(source))
    kinds = [getattr(call_events(ctx).classify(c), "kind", None) for c in ctx.calls]
    # `model.train(flag)`: the mode the flag says, either one (TL007 asks whether it may be true).
    assert kinds == [EventKind.EVAL, EventKind.TRAIN, EventKind.EVAL, EventKind.SET_MODE, EventKind.TRAIN]
