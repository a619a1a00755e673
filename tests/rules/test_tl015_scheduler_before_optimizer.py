"""TL015 scheduler-before-optimizer: the LR schedule advanced before the optimizer step."""

import pytest
from expect_markers import check

CODE = "TL015"


# ----- positives ------------------------------------------------------------------------------


def test_epoch_scheduler_at_top_of_epoch_loop(lint):
    findings = check(
        lint,
        """
        import torch
        from torch.optim.lr_scheduler import MultiStepLR
        model = Net()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scheduler = MultiStepLR(optimizer, milestones=[30, 60])
        for epoch in range(90):
            scheduler.step()  # expect: TL015
            for images, target in train_loader:
                loss = criterion(model(images), target)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        """,
        CODE,
    )
    message = findings[0].message
    assert "`scheduler.step()` runs before `optimizer.step()` (line 13)" in message
    assert "after the optimizer step" in message
    assert findings[0].severity == "warning" and findings[0].name == "scheduler-before-optimizer"


def test_per_batch_scheduler_before_step(lint):
    check(
        lint,
        """
        from transformers import get_linear_schedule_with_warmup
        def train(model, optimizer, loader, total):
            lr_scheduler = get_linear_schedule_with_warmup(optimizer, 100, total)
            for batch in loader:
                loss = model(**batch).loss
                loss.backward()
                lr_scheduler.step()  # expect: TL015
                optimizer.step()
                optimizer.zero_grad()
        """,
        CODE,
    )


def test_scheduler_in_helper_called_before_epoch(lint):
    check(
        lint,
        """
        import torch
        class Trainer:
            def __init__(self, model):
                self.model = model
                self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                self.scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(self.optimizer, 100)
            def adjust_lr(self):
                self.scheduler.step()  # expect: TL015
            def train_epoch(self, loader):
                for x, y in loader:
                    self.optimizer.zero_grad()
                    self.criterion(self.model(x), y).backward()
                    self.optimizer.step()
            def fit(self, loader, epochs):
                for epoch in range(epochs):
                    self.adjust_lr()
                    self.train_epoch(loader)
        """,
        CODE,
    )


def test_warmup_scheduler_before_scaler_step(lint):
    check(
        lint,
        """
        import torch
        def train(model, opt, loader, warmup_scheduler):
            scaler = torch.amp.GradScaler()
            for epoch in range(10):
                for x in loader:
                    if epoch < 1:
                        warmup_scheduler.step()  # expect: TL015
                    scaler.scale(model(x).mean()).backward()
                    scaler.step(opt)
                    scaler.update()
                    opt.zero_grad()
        def main(model, opt, loader):
            train(model, opt, loader, torch.optim.lr_scheduler.LinearLR(opt, 0.1, total_iters=500))
        """,
        CODE,
    )


def test_step_function_without_loop(lint):
    check(
        lint,
        """
        from transformers import get_cosine_schedule_with_warmup
        def training_step(model, batch, optimizer, scheduler):
            loss = model(batch).mean()
            loss.backward()
            scheduler.step()  # expect: TL015
            optimizer.step()
            optimizer.zero_grad()
            return loss.item()
        def fit(model, loader, optimizer):
            scheduler = get_cosine_schedule_with_warmup(optimizer, 100, 10_000)
            for batch in loader:
                training_step(model, batch, optimizer, scheduler)
        """,
        CODE,
    )


def test_project_scheduler_class_subclassing_torch_through_a_project_base(lint):
    check(
        lint,
        """
        import torch
        from torch.optim.lr_scheduler import LRScheduler
        class WarmupBase(LRScheduler):
            pass
        class WarmupCosine(WarmupBase):
            def get_lr(self):
                return [0.1 for _ in self.base_lrs]
        def train(model, loader):
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
            sched = WarmupCosine(opt)
            for x in loader:
                sched.step()  # expect: TL015
                model(x).mean().backward()
                opt.step()
                opt.zero_grad()
        """,
        CODE,
    )


# ----- hard negatives -------------------------------------------------------------------------


def test_plateau_scheduler_with_metric_at_epoch_level(lint):
    assert not lint(
        """
        import torch
        optimizer = torch.optim.Adam(model.parameters())
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, "min")
        for epoch in range(20):
            for x, y in loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
            val_loss = evaluate(model)
            scheduler.step(val_loss)
        """,
        CODE,
    )


def test_per_epoch_scheduler_after_batch_loop(lint):
    assert not lint(
        """
        import torch
        def main(model, loader, epochs):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30)
            for epoch in range(epochs):
                for x, y in loader:
                    loss = model(x, y)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                scheduler.step()
        """,
        CODE,
    )


def test_timm_style_step_with_epoch_argument(lint):
    assert not lint(
        """
        def train(model, optimizer, lr_scheduler, loader, start_epoch, epochs):
            for epoch in range(start_epoch, epochs):
                lr_scheduler.step(epoch)
                for x in loader:
                    model(x).mean().backward()
                    optimizer.step()
                    optimizer.zero_grad()
        """,
        CODE,
    )


def test_scheduler_after_step_under_accumulation_guard(lint):
    assert not lint(
        """
        def train(model, optimizer, scheduler, loader, accum):
            for i, batch in enumerate(loader):
                (model(**batch).loss / accum).backward()
                if (i + 1) % accum == 0:
                    optimizer.step()
                    scheduler.step()
                    optimizer.zero_grad()
        """,
        CODE,
    )


def test_scheduler_and_optimizer_in_sibling_functions(lint):
    # Two separate runs called one after the other: the first one's scheduler step is not
    # before the second one's optimizer step "in the same iteration".
    assert not lint(
        """
        def run_engine(engine, lr_scheduler, loader):
            for batch in loader:
                engine.backward(engine(batch).loss)
                engine.step()
                lr_scheduler.step()
        def run_plain(model, optimizer, loader):
            for batch in loader:
                model(batch).loss.backward()
                optimizer.step()
        for trial in range(3):
            run_engine(engine, lr_scheduler, loader)
            run_plain(model, optimizer, loader)
        """,
        CODE,
    )


def test_gan_scheduler_after_first_optimizer(lint):
    assert not lint(
        """
        def train(netD, netG, optD, optG, schedD, schedG, loader):
            for real in loader:
                netD(real).mean().backward()
                optD.step()
                schedD.step()
                netG(real).mean().backward()
                optG.step()
                schedG.step()
        """,
        CODE,
    )


def test_scheduler_loop_without_training(lint):
    # Plotting a schedule: no backward, no optimizer update in the loop.
    assert not lint(
        """
        def plot(scheduler, optimizer, steps):
            lrs = []
            for _ in range(steps):
                scheduler.step()
                lrs.append(optimizer.param_groups[0]["lr"])
            return lrs
        """,
        CODE,
    )


def test_gan_scheduler_before_its_own_optimizer(lint):
    findings = check(
        lint,
        """
        import torch
        def train(netD, netG, loader):
            optD = torch.optim.Adam(netD.parameters())
            optG = torch.optim.Adam(netG.parameters())
            schedD = torch.optim.lr_scheduler.StepLR(optD, 10)
            schedG = torch.optim.lr_scheduler.StepLR(optG, 10)
            for real in loader:
                netD(real).mean().backward()
                optD.step()
                schedD.step()
                schedG.step()  # expect: TL015
                netG(real).mean().backward()
                optG.step()
        """,
        CODE,
    )
    assert "`schedG.step()` runs before `optG.step()` (line 14)" in findings[0].message


def test_project_schedule_class_that_sets_the_coming_rate_itself_is_silent(lint):
    # jepa's WarmupCosineSchedule: no torch scheduler base, step() writes the coming step's rate
    # into the param groups (the optimizer is built without one): stepping it first is its contract.
    assert not lint(
        """
        import math
        import torch
        class WarmupCosineSchedule(object):
            def __init__(self, optimizer, warmup_steps, ref_lr, T_max):
                self.optimizer, self.warmup_steps, self.ref_lr, self.T_max = optimizer, warmup_steps, ref_lr, T_max
                self._step = 0
            def step(self):
                self._step += 1
                new_lr = self.ref_lr * min(1.0, self._step / self.warmup_steps)
                for group in self.optimizer.param_groups:
                    group["lr"] = new_lr
                return new_lr
        def init_opt(model):
            optimizer = torch.optim.AdamW(model.parameters())
            return optimizer, WarmupCosineSchedule(optimizer, 10, 1e-3, 1000)
        def train(model, loader):
            optimizer, scheduler = init_opt(model)
            for x in loader:
                scheduler.step()
                model(x).mean().backward()
                optimizer.step()
                optimizer.zero_grad()
        """,
        CODE,
    )


def test_schedule_built_by_a_project_module_not_shown_is_silent(lint):
    # The class comes from a module of the project the linter cannot read, and the object is
    # known only by its name: nothing shows torch's contract.
    assert not lint(
        """
        import torch
        from src.utils.schedulers import WarmupCosineSchedule
        def train(model, loader, lr_scheduler):
            optimizer = torch.optim.AdamW(model.parameters())
            scheduler = WarmupCosineSchedule(optimizer, warmup_steps=10)
            for x in loader:
                scheduler.step()
                lr_scheduler.step()
                model(x).mean().backward()
                optimizer.step()
                optimizer.zero_grad()
        """,
        CODE,
    )


def test_a_schedule_free_optimizer_is_an_optimizer_not_a_scheduler(lint):
    # `schedulefree.AdamWScheduleFree` has "Schedule" in its name but is an optimizer: its step()
    # before another optimizer's step is no scheduler step.
    assert not lint(
        """
        import torch
        import schedulefree
        def train(backbone, head, loader):
            opt = schedulefree.AdamWScheduleFree(backbone.parameters(), lr=1e-3)
            head_opt = torch.optim.SGD(head.parameters(), lr=0.1)
            opt.train()
            for x in loader:
                head(backbone(x)).mean().backward()
                opt.step()
                head_opt.step()
                opt.zero_grad()
                head_opt.zero_grad()
        """,
        CODE,
    )


# ----- project subclasses of torch's schedulers ---------------------------------------------------


def test_subclass_keeping_torchs_step_at_epoch_start(lint):
    """A subclass that only rewrites ``get_lr()`` keeps torch's ``step()`` and its contract."""
    findings = check(
        lint,
        """
        import torch
        from torch.optim.lr_scheduler import _LRScheduler

        class ExponentialRamp(_LRScheduler):
            def __init__(self, optimizer, total, last_epoch=-1):
                self.total = total
                super().__init__(optimizer, last_epoch)

            def get_lr(self):
                return [base * 10 ** (self.last_epoch / self.total) for base in self.base_lrs]

        model = Net()
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-5)
        ramp = ExponentialRamp(optimizer, total=100)
        for epoch in range(10):
            ramp.step()  # expect: TL015
            for x, y in loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
        """,
        CODE,
    )
    assert "`ramp.step()` runs before `optimizer.step()` (line 21)" in findings[0].message


def test_subclass_with_its_own_step_has_its_own_contract(lint):
    """A warm-up subclass that replaces ``step()`` (stepped at the start of each epoch, rate 0 at
    epoch 0) is the project's schedule, not torch's."""
    check(
        lint,
        """
        import torch
        from torch.optim import lr_scheduler

        class LinearWarmup(lr_scheduler._LRScheduler):
            def __init__(self, optimizer, warmup_epochs, after):
                self.warmup_epochs = warmup_epochs
                self.after = after
                super().__init__(optimizer)

            def get_lr(self):
                return [base * self.last_epoch / self.warmup_epochs for base in self.base_lrs]

            def step(self, epoch=None):
                if self.last_epoch >= self.warmup_epochs:
                    self.after.step()
                else:
                    super().step()

        model = Net()
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
        cosine = lr_scheduler.CosineAnnealingLR(optimizer, T_max=50)
        warmup = LinearWarmup(optimizer, warmup_epochs=5, after=cosine)
        for epoch in range(55):
            warmup.step()
            for x, y in loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
        """,
        CODE,
    )


# ----- schedulers drawn from a table of classes -----------------------------------------------------


def test_scheduler_built_from_a_table_of_torch_classes_by_a_factory(lint):
    """A factory that calls a class drawn from a dict of torch schedulers (and a subclass that only
    rewrites ``get_lr()``) returns a torch scheduler."""
    findings = check(
        lint,
        """
        import torch
        from torch.optim.lr_scheduler import CosineAnnealingLR, StepLR, _LRScheduler

        class Flat(_LRScheduler):
            def get_lr(self):
                return list(self.base_lrs)

        SCHEDULES = {"step": StepLR, "cosine": CosineAnnealingLR, "flat": Flat}

        def make_schedule(optimizer, cfg):
            kind = cfg.pop("kind")
            return SCHEDULES[kind](optimizer, **cfg)

        def train(model, loader, cfg):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            schedule = make_schedule(optimizer, cfg)
            for x, y in loader:
                schedule.step()  # expect: TL015
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
        """,
        CODE,
    )
    assert "`schedule.step()` runs before `optimizer.step()` (line 22)" in findings[0].message


def test_table_with_a_scheduler_that_steps_itself_is_silent(lint):
    """One element of the table replaces ``step()`` with its own contract; which one is drawn is not
    known, so the object is not shown to be torch's."""
    check(
        lint,
        """
        import torch
        from torch.optim.lr_scheduler import StepLR, _LRScheduler

        class WarmStart(_LRScheduler):
            def step(self, epoch=None):
                super().step(epoch)

        SCHEDULES = [StepLR, WarmStart]

        def train(model, loader, which):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            schedule = SCHEDULES[which](optimizer, 10)
            for x, y in loader:
                schedule.step()
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
        """,
        CODE,
    )


def test_table_filled_elsewhere_is_silent(lint):
    """A table another module adds to (``update``) may hold anything."""
    check(
        lint,
        """
        import torch
        from torch.optim.lr_scheduler import StepLR

        SCHEDULES = {"step": StepLR}
        SCHEDULES.update(plugin_schedules())

        def train(model, loader, kind):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            schedule = SCHEDULES[kind](optimizer, 10)
            for x, y in loader:
                schedule.step()
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
        """,
        CODE,
    )


@pytest.mark.parametrize("package", ["pytorch_transformers", "vendor.pytorch_transformers"])
def test_pytorch_transformers_warmup_schedule_stepped_first(lint, package):
    findings = check(
        lint,
        f"""
        from {package} import AdamW, WarmupLinearSchedule

        def finetune(model, loader, total_steps):
            optimizer = AdamW(model.parameters(), lr=5e-5)
            scheduler = WarmupLinearSchedule(optimizer, warmup_steps=100, t_total=total_steps)
            for batch in loader:
                model(**batch)[0].backward()
                scheduler.step()  # expect: TL015
                optimizer.step()
                model.zero_grad()
        """,
        CODE,
    )
    assert "`scheduler.step()` runs before `optimizer.step()` (line 10)" in findings[0].message


def test_pytorch_transformers_warmup_schedule_stepped_after_optimizer(lint):
    check(
        lint,
        """
        from pytorch_transformers.optimization import WarmupCosineSchedule

        def finetune(model, optimizer, loader):
            scheduler = WarmupCosineSchedule(optimizer, warmup_steps=500, t_total=10000)
            for batch in loader:
                model(**batch)[0].backward()
                optimizer.step()
                scheduler.step()
                model.zero_grad()
        """,
        CODE,
    )


# ----- a guard that skips the first iteration ----------------------------------------------------


@pytest.mark.parametrize(
    "guard, step_at",
    [
        ("if epoch > 0:\n            sched.step()", "if epoch > 0"),
        ("if epoch == 0:\n            warm_up(opt)\n        else:\n            sched.step()", "else of epoch == 0"),
        (
            "if epoch < 2:\n            warm_up(opt)\n        elif epoch == 2:\n            pass\n        else:\n            sched.step()",
            "elif chain",
        ),
        ("if epoch:\n            sched.step()", "truthy counter"),
    ],
)
def test_scheduler_guarded_past_first_epoch_is_silent(lint, guard, step_at):
    # The optimizer already stepped in epoch 0: stepping at the top of epoch k is stepping
    # at the end of epoch k-1, so no learning rate is skipped.
    source = f"""
import torch
def warm_up(opt):
    for group in opt.param_groups:
        group["lr"] = 0.01
def fit(model, loader, epochs):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, epochs)
    for epoch in range(epochs):
        {guard}
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
"""
    assert [f for f in lint(source) if f.code == CODE] == [], step_at


def test_guard_after_start_epoch_is_silent(lint):
    check(
        lint,
        """
        import torch
        def fit(model, loader, args):
            opt = torch.optim.Adam(model.parameters())
            sched = torch.optim.lr_scheduler.StepLR(opt, 10)
            for epoch in range(args.start_epoch, args.epochs):
                if epoch != args.start_epoch:
                    sched.step()
                for x, y in loader:
                    opt.zero_grad()
                    torch.nn.functional.l1_loss(model(x), y).backward()
                    opt.step()
        """,
        CODE,
    )


def test_step_function_guarded_on_epoch_counter_is_silent(lint):
    check(
        lint,
        """
        import torch
        class Learner:
            def __init__(self, net):
                self.net = net
                self.opt = torch.optim.SGD(net.parameters(), lr=0.1)
                self.sched = torch.optim.lr_scheduler.ExponentialLR(self.opt, 0.9)
                self.seen_epoch = -1
            def observe(self, x, y, epoch):
                if self.seen_epoch != epoch:
                    if epoch > 0:
                        self.sched.step()
                    self.seen_epoch = epoch
                loss = torch.nn.functional.cross_entropy(self.net(x), y)
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
        """,
        CODE,
    )


@pytest.mark.parametrize(
    "header, guard",
    [
        # The guard holds on the first iteration: the schedule still advances before any update.
        ("for epoch in range(epochs):", "if epoch >= 0:"),
        ("for epoch in range(1, epochs):", "if epoch > 0:"),
        ("for epoch, _ in enumerate(phases, start=1):", "if epoch != 0:"),
        ("for epoch in range(epochs):", "if epoch % 10 == 0:"),
        ("for epoch in range(start, epochs):", "if epoch == start or warm:"),
    ],
)
def test_guard_true_on_first_iteration_is_reported(lint, header, guard):
    findings = check(
        lint,
        f"""
        import torch
        def fit(model, loader, epochs, phases, start, warm):
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            sched = torch.optim.lr_scheduler.StepLR(opt, 30)
            {header}
                {guard}
                    sched.step()  # expect: TL015
                for x, y in loader:
                    opt.zero_grad()
                    torch.nn.functional.mse_loss(model(x), y).backward()
                    opt.step()
        """,
        CODE,
    )
    assert "`sched.step()` runs before `opt.step()` (line 12)" in findings[0].message


@pytest.mark.parametrize(
    "last, expect",
    [
        # `range(last + 1, n)` with `last = -1`: the first epoch is 0, so `epoch != 0` skips it.
        ("-1", ""),
        # The count starts at 1: `epoch != 0` holds on the first epoch, and the step comes first.
        ("0", "  # expect: TL015"),
    ],
)
def test_start_bound_written_as_an_offset_of_a_name(lint, last, expect):
    findings = check(
        lint,
        f"""
        import torch
        def fit(model, loader, epochs):
            last_done = {last}
            opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
            sched = torch.optim.lr_scheduler.MultiStepLR(opt, [30, 60], last_epoch=last_done)
            for epoch in range(last_done + 1, epochs):
                if epoch != 0:
                    sched.step(){expect}
                for x, y in loader:
                    opt.zero_grad()
                    torch.nn.functional.smooth_l1_loss(model(x), y).backward()
                    opt.step()
        """,
        CODE,
    )
    if expect:
        assert "`sched.step()` runs before `opt.step()` (line 13)" in findings[0].message


def test_counter_rebound_before_guard_is_reported(lint):
    # `epoch` no longer holds the loop's count where the guard reads it: nothing shows the
    # first iteration is skipped.
    check(
        lint,
        """
        import torch
        def fit(model, loader, epochs, offset):
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            sched = torch.optim.lr_scheduler.StepLR(opt, 30)
            for epoch in range(epochs):
                epoch = epoch + offset
                if epoch > 0:
                    sched.step()  # expect: TL015
                for x, y in loader:
                    opt.zero_grad()
                    torch.nn.functional.mse_loss(model(x), y).backward()
                    opt.step()
        """,
        CODE,
    )


def test_step_function_guarded_on_a_flag_is_reported(lint):
    # A flag parameter is no counter: `if use_schedule:` may hold on the first call.
    check(
        lint,
        """
        import torch
        def train_step(model, opt, sched, batch, use_schedule):
            if use_schedule:
                sched.step()  # expect: TL015
            loss = model(batch).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        def main(model, loader):
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            sched = torch.optim.lr_scheduler.LinearLR(opt)
            for batch in loader:
                train_step(model, opt, sched, batch, True)
        """,
        CODE,
    )


def test_per_batch_step_skipping_the_first_batch_is_silent(lint):
    check(
        lint,
        """
        import torch
        def fit(model, loader):
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            sched = torch.optim.lr_scheduler.OneCycleLR(opt, 0.1, total_steps=len(loader))
            for it, (x, y) in enumerate(loader, start=1):
                if it > 1:
                    sched.step()
                opt.zero_grad()
                torch.nn.functional.mse_loss(model(x), y).backward()
                opt.step()
        """,
        CODE,
    )
