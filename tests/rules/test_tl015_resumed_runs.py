"""TL015 on resumed runs: a scheduler step that runs before this run's first optimizer step,
where the optimizer's state was loaded from a checkpoint (it stepped in the run that saved it),
and guards on an epoch counter that start at 0 or on a resume path that loads that state."""

import pytest
from expect_markers import check

CODE = "TL015"


# ----- a one-shot step after the optimizer's state was loaded ----------------------------------


def test_resync_step_after_state_loaded_by_the_constructor_is_silent(lint):
    check(
        lint,
        """
        import torch
        class Runner:
            def __init__(self, net, cfg):
                self.net = net
                self.cfg = cfg
                self.opt = torch.optim.AdamW(net.parameters(), lr=cfg.lr)
                self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, lambda s: min(1.0, s / 500))
                self.step_count = 0
                if cfg.resume_from:
                    self._restore(cfg.resume_from)
            def _restore(self, path):
                blob = torch.load(path, map_location="cpu")
                self.net.load_state_dict(blob["net"])
                self.opt.load_state_dict(blob["opt"])
                self.sched.load_state_dict(blob["sched"])
                self.step_count = blob["step"]
            def fit(self, batches):
                if self.cfg.resume_from and self.opt.param_groups[0]["lr"] != self.sched.get_last_lr()[0]:
                    self.sched.step()
                while self.step_count < self.cfg.max_steps:
                    for x, y in batches:
                        loss = torch.nn.functional.cross_entropy(self.net(x), y)
                        self.opt.zero_grad()
                        loss.backward()
                        self.opt.step()
                        self.sched.step()
                        self.step_count += 1
        """,
        CODE,
    )


def test_resync_step_after_state_loaded_in_the_same_function_is_silent(lint):
    check(
        lint,
        """
        import torch
        def train(model, loader, args):
            optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
            scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, args.epochs)
            if args.checkpoint:
                state = torch.load(args.checkpoint)
                optimizer.load_state_dict(state["optimizer"])
                scheduler.last_epoch = state["epoch"]
                scheduler.step()
            for epoch in range(args.epochs):
                for x, y in loader:
                    optimizer.zero_grad()
                    torch.nn.functional.mse_loss(model(x), y).backward()
                    optimizer.step()
                scheduler.step()
        """,
        CODE,
    )


def test_one_shot_step_with_no_state_loaded_is_reported(lint):
    findings = check(
        lint,
        """
        import torch
        class Runner:
            def __init__(self, net, cfg):
                self.net = net
                self.cfg = cfg
                self.opt = torch.optim.AdamW(net.parameters(), lr=cfg.lr)
                self.sched = torch.optim.lr_scheduler.StepLR(self.opt, 1000)
                if cfg.resume_from:
                    self.net.load_state_dict(torch.load(cfg.resume_from))
            def fit(self, batches):
                if self.cfg.skip_warmup:
                    self.sched.step()  # expect: TL015
                for x, y in batches:
                    loss = torch.nn.functional.cross_entropy(self.net(x), y)
                    self.opt.zero_grad()
                    loss.backward()
                    self.opt.step()
        """,
        CODE,
    )
    assert "`self.sched.step()` runs before `self.opt.step()` (line 18)" in findings[0].message


def test_one_shot_step_before_the_state_is_loaded_is_reported(lint):
    # The load comes after the step on this path: nothing had stepped the optimizer yet.
    check(
        lint,
        """
        import torch
        def train(model, loader, args):
            optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
            scheduler = torch.optim.lr_scheduler.LinearLR(optimizer)
            if args.fast_start:
                scheduler.step()  # expect: TL015
            if args.checkpoint:
                optimizer.load_state_dict(torch.load(args.checkpoint))
            for x, y in loader:
                optimizer.zero_grad()
                torch.nn.functional.mse_loss(model(x), y).backward()
                optimizer.step()
        """,
        CODE,
    )


def test_unguarded_one_shot_step_is_reported_even_when_a_resume_may_load(lint):
    # A fresh run (no checkpoint) reaches the step too, before any update.
    check(
        lint,
        """
        import torch
        class Runner:
            def __init__(self, net, ckpt):
                self.net = net
                self.opt = torch.optim.SGD(net.parameters(), lr=0.1)
                self.sched = torch.optim.lr_scheduler.StepLR(self.opt, 10)
                if ckpt:
                    self.opt.load_state_dict(torch.load(ckpt))
            def fit(self, batches):
                self.sched.step()  # expect: TL015
                for x, y in batches:
                    self.opt.zero_grad()
                    torch.nn.functional.mse_loss(self.net(x), y).backward()
                    self.opt.step()
        """,
        CODE,
    )


# ----- `epoch > k` at the top of an epoch loop ---------------------------------------------------

_EPOCH_LOOP = """
import argparse
import torch
def main(args, model, loader):
    optimizer = torch.optim.Adamax(model.parameters(), args.lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, args.epochs)
    {resume}
    for epoch in range(first_epoch, args.epochs):
        if epoch > {bound}:
            scheduler.step(){marker}
        for x in loader:
            optimizer.zero_grad()
            model(x).mean().backward()
            optimizer.step()
if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--warmup_epochs", {option})
    parser.add_argument("--resume", action="store_true")
    main(parser.parse_args(), torch.nn.Linear(4, 1), [torch.randn(8, 4)])
"""
_RESUME_LOADING_STATE = """if args.resume:
        state = torch.load("last.pt")
        first_epoch = state["epoch"]
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
    else:
        first_epoch = 0"""
_RESUME_MODEL_ONLY = _RESUME_LOADING_STATE.replace('optimizer.load_state_dict(state["optimizer"])', "pass")


@pytest.mark.parametrize(
    "resume, bound, option",
    [
        ("first_epoch = 0", "args.warmup_epochs", "type=int, default=5"),
        ("first_epoch = 0", "args.warmup_epochs", "default=0"),
        ("first_epoch = 0", "warmup", "type=int, default=5"),
        (_RESUME_LOADING_STATE, "args.warmup_epochs", "type=int, default=5"),
    ],
)
def test_step_after_a_non_negative_warmup_count_is_silent(lint, resume, bound, option):
    source = _EPOCH_LOOP.format(resume=resume, bound=bound, option=option, marker="")
    source = source.replace("    for epoch", "    warmup = 2\n    for epoch", 1)
    check(lint, source, CODE)


@pytest.mark.parametrize(
    "resume, bound, option",
    [
        # k may be negative: the default says so.
        ("first_epoch = 0", "args.warmup_epochs", "type=int, default=-1"),
        # k is a float option: not shown to be a count.
        ("first_epoch = 0", "args.warmup_epochs", "type=float, default=0.5"),
        # k unknown: a parameter of the function.
        ("first_epoch = 0", "len(loader) - 2", "type=int, default=5"),
        # the counter may start anywhere: the resume path loads no optimizer state.
        (_RESUME_MODEL_ONLY, "args.warmup_epochs", "type=int, default=5"),
        # the counter starts above the bound on a fresh run.
        ("first_epoch = 9", "args.warmup_epochs", "type=int, default=5"),
    ],
)
def test_step_after_an_unshown_bound_is_reported(lint, resume, bound, option):
    source = _EPOCH_LOOP.format(resume=resume, bound=bound, option=option, marker="  # expect: TL015")
    findings = check(lint, source, CODE)
    assert "`scheduler.step()` runs before `optimizer.step()`" in findings[0].message


_EPOCH_LOOP_WITH_STEP_HELPER = """
import argparse
import torch
def train_epoch(model, loader, optimizer):
    for x in loader:
        optimizer.zero_grad()
        model(x).mean().backward()
        optimizer.step()
def main(args, model, loader):
    vae_optimizer = torch.optim.Adamax(model.parameters(), args.lr)
    vae_scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(vae_optimizer, args.epochs)
    if args.resume:
        state = torch.load("last.pt")
        first_epoch = state["epoch"]
        model.load_state_dict(state["model"])
        {load}
    else:
        step, first_epoch, best = 0, 0, 1e10
    for epoch in range(first_epoch, args.epochs):
        if epoch > args.warmup_epochs:
            vae_scheduler.step(){marker}
        train_epoch(model, loader, vae_optimizer)
if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--warmup_epochs", type=int, default=5)
    parser.add_argument("--resume", action="store_true")
    main(parser.parse_args(), torch.nn.Linear(4, 1), [torch.randn(8, 4)])
"""


def test_resume_load_is_matched_to_the_scheduled_optimizer_when_a_helper_steps_it(lint):
    # The helper names the optimizer by its parameter (`optimizer`), the resume path by the
    # caller's name (`vae_optimizer`): the scheduler was built on the latter, so its load counts.
    load = 'vae_optimizer.load_state_dict(state["optimizer"])'
    check(lint, _EPOCH_LOOP_WITH_STEP_HELPER.format(load=load, marker=""), CODE)


def test_resume_without_the_scheduled_optimizers_state_is_reported_when_a_helper_steps_it(lint):
    source = _EPOCH_LOOP_WITH_STEP_HELPER.format(load="pass", marker="  # expect: TL015")
    findings = check(lint, source, CODE)
    assert "`vae_scheduler.step()` runs before" in findings[0].message
