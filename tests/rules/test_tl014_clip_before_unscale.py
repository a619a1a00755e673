"""TL014 clip-before-unscale: clipping gradients that GradScaler has not unscaled yet."""

import pytest
from expect_markers import check

CODE = "TL014"


# ----- positives ------------------------------------------------------------------------------


def test_module_level_loop_clips_scaled_gradients(lint):
    findings = check(
        lint,
        """
        import torch
        scaler = torch.amp.GradScaler("cuda")
        for x, y in loader:
            with torch.autocast("cuda"):
                loss = criterion(model(x), y)
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: TL014
            scaler.step(optimizer)
            scaler.update()
        """,
        CODE,
    )
    message = findings[0].message
    assert "scaler.unscale_(optimizer)" in message and "line 8" in message
    assert findings[0].severity == "error" and findings[0].name == "clip-before-unscale"


def test_amp_branch_of_trainer_method_like_mingpt(lint):
    # The shape of pytorch/examples minGPT-ddp: the AMP branch forgets unscale_, the fp32 one is fine.
    findings = check(
        lint,
        """
        import torch
        class Trainer:
            def __init__(self, cfg, model, optimizer):
                self.model, self.optimizer, self.cfg = model, optimizer, cfg
                if cfg.use_amp:
                    self.scaler = torch.amp.GradScaler("cuda")
            def _run_batch(self, src, tgt):
                with torch.amp.autocast("cuda", dtype=torch.float16, enabled=self.cfg.use_amp):
                    _, loss = self.model(src, tgt)
                self.optimizer.zero_grad(set_to_none=True)
                if self.cfg.use_amp:
                    self.scaler.scale(loss).backward()
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.clip)  # expect: TL014
                    self.scaler.step(self.optimizer)
                    self.scaler.update()
                else:
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.clip)
                    self.optimizer.step()
            def _run_epoch(self, loader):
                for src, tgt in loader:
                    self._run_batch(src, tgt)
        """,
        CODE,
    )
    assert "self.scaler.unscale_(self.optimizer)" in findings[0].message


def test_gradient_accumulation_clip_at_boundary(lint):
    findings = check(
        lint,
        """
        from torch.cuda.amp import GradScaler
        from torch.nn.utils import clip_grad_norm_
        scaler = GradScaler()
        def train(model, opt, loader, accum):
            for step, batch in enumerate(loader):
                loss = model(**batch).loss / accum
                scaler.scale(loss).backward()
                if (step + 1) % accum == 0:
                    clip_grad_norm_(model.parameters(), max_norm=1.0)  # expect: TL014
                    scaler.step(opt)
                    scaler.update()
                    opt.zero_grad()
        """,
        CODE,
    )
    assert "`clip_grad_norm_`" in findings[0].message


def test_clip_value_after_backward_in_helper(lint):
    check(
        lint,
        """
        import torch
        import torch.nn as nn
        def backward_step(scaler, loss):
            scaler.scale(loss).backward()
        def train(model, opt, loader):
            scaler = torch.amp.GradScaler()
            for x in loader:
                backward_step(scaler, model(x).mean())
                nn.utils.clip_grad_value_(model.parameters(), 0.1)  # expect: TL014
                scaler.step(opt)
                scaler.update()
        """,
        CODE,
    )


def test_fsdp_model_clip_without_unscale(lint):
    check(
        lint,
        """
        import torch
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        def train(net, optimizer, loader):
            model = FSDP(net)
            scaler = torch.amp.GradScaler()
            for batch in loader:
                scaler.scale(model(batch).sum()).backward()
                model.clip_grad_norm_(1.0)  # expect: TL014
                scaler.step(optimizer)
                scaler.update()
        """,
        CODE,
    )


def test_unscale_for_another_branch_does_not_help(lint):
    check(
        lint,
        """
        import torch
        scaler = torch.amp.GradScaler()
        def train(model, opt, loader, log_norm):
            for x in loader:
                scaler.scale(model(x)).backward()
                if log_norm:
                    scaler.unscale_(opt)
                    print(grad_norm(model))
                else:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: TL014
                scaler.step(opt)
                scaler.update()
        """,
        CODE,
    )


# ----- hard negatives -------------------------------------------------------------------------


def test_unscale_before_clip_like_nanogpt(lint):
    assert not lint(
        """
        import torch
        scaler = torch.cuda.amp.GradScaler(enabled=True)
        while True:
            for micro_step in range(4):
                loss = model(X, Y)
                scaler.scale(loss).backward()
            if grad_clip != 0.0:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
            scaler.step(optimizer)
            scaler.update()
        """,
        CODE,
    )


def test_opaque_loss_scaler_helper_is_not_flagged(lint):
    # timm's NativeScaler unscales inside its __call__; the helper is defined in another module.
    assert not lint(
        """
        import torch
        from timm.utils import NativeScaler
        def train(model, optimizer, loader):
            loss_scaler = NativeScaler()
            for x, y in loader:
                loss = model(x).sub(y).abs().mean()
                loss_scaler(loss, optimizer, clip_grad=1.0, parameters=model.parameters())
        """,
        CODE,
    )


def test_helper_that_unscales_before_clipping(lint):
    assert not lint(
        """
        import torch
        class NativeScalerLike:
            def __init__(self):
                self._scaler = torch.amp.GradScaler()
            def __call__(self, loss, optimizer, clip_grad=None, parameters=None):
                self._scaler.scale(loss).backward()
                if clip_grad is not None:
                    self._scaler.unscale_(optimizer)
                    torch.nn.utils.clip_grad_norm_(parameters, clip_grad)
                self._scaler.step(optimizer)
                self._scaler.update()
        """,
        CODE,
    )


def test_accelerate_and_fabric_clip_unscale_for_you(lint):
    assert not lint(
        """
        import torch
        def train(accelerator, fabric, model, opt, loader):
            scaler = torch.amp.GradScaler()
            for x in loader:
                scaler.scale(model(x)).backward()
                accelerator.clip_grad_norm_(model.parameters(), 1.0)
                fabric.clip_gradients(model, opt, max_norm=1.0)
                scaler.step(opt)
                scaler.update()
        """,
        CODE,
    )


def test_plain_backward_without_scaler(lint):
    assert not lint(
        """
        import torch
        def train(model, opt, loader):
            for x in loader:
                model(x).mean().backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                opt.zero_grad()
        """,
        CODE,
    )


def test_clip_after_scaler_step_is_not_this_rule(lint):
    # Clipping after the step is pointless but not clipping scaled gradients.
    assert not lint(
        """
        import torch
        scaler = torch.amp.GradScaler()
        def train(model, opt, loader):
            for x in loader:
                scaler.scale(model(x)).backward()
                scaler.step(opt)
                scaler.update()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        """,
        CODE,
    )


def test_unscale_through_named_helper_defined_elsewhere(lint):
    assert not lint(
        """
        import torch
        from mylib import unscale_gradients
        scaler = torch.amp.GradScaler()
        def train(model, opt, loader):
            for x in loader:
                scaler.scale(model(x)).backward()
                unscale_gradients(scaler, opt)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(opt)
                scaler.update()
        """,
        CODE,
    )


@pytest.mark.parametrize("backward", ["loss.backward()", "accelerator.backward(loss)"])
def test_branch_without_scaler(lint, backward):
    assert not lint(
        f"""
        import torch
        def train(model, opt, loader, scaler):
            for x in loader:
                loss = model(x)
                if scaler is not None:
                    scaler.scale(loss).backward()
                    scaler.unscale_(opt)
                else:
                    {backward}
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
        """,
        CODE,
    )


def test_aliased_clip_import(lint):
    findings = check(
        lint,
        """
        import torch
        from torch.nn.utils import clip_grad_norm_ as clip
        scaler = torch.amp.GradScaler()
        def train(model, opt, loader):
            for x in loader:
                scaler.scale(model(x)).backward()
                clip(model.parameters(), 5.0)  # expect: TL014
                scaler.step(opt)
                scaler.update()
        """,
        CODE,
    )
    assert "`clip`" in findings[0].message


def test_scaled_loss_held_in_a_variable(lint):
    findings = check(
        lint,
        """
        import torch
        def train(model, opt, loader):
            grad_scaler = torch.amp.GradScaler()
            for x in loader:
                scaled = grad_scaler.scale(model(x).mean())
                scaled.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: TL014
                grad_scaler.step(opt)
                grad_scaler.update()
        """,
        CODE,
    )
    assert "grad_scaler.unscale_(opt)" in findings[0].message


# ----- family 11: conditions correlated through a helper ----------------------------------------------

_HELPER = """
    import torch

    def backward(total_loss, scaler):
        if scaler is not None:
            scaler.scale(total_loss).backward()
        else:
            total_loss.backward()

    def train_one_epoch(model, loader, loss_fn, optimizer, scaler, args):
        for images, texts in loader:
            optimizer.zero_grad()
            backward(loss_fn(model(images, texts)), scaler)
            if scaler is not None:
                if args.grad_clip_norm is not None:
                    scaler.unscale_(optimizer)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip_norm)
                scaler.step(optimizer)
                scaler.update()
            else:
                if args.grad_clip_norm is not None:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip_norm)
                optimizer.step()
    """


def test_clip_on_the_path_where_the_helper_did_not_scale_is_silent(lint):
    assert lint(_HELPER, "TL014") == []


def test_clip_after_a_helper_that_always_scales_is_reported(lint):
    source = _HELPER.replace(
        """        if scaler is not None:
            scaler.scale(total_loss).backward()
        else:
            total_loss.backward()""",
        "        scaler.scale(total_loss).backward()",
    ).replace(
        "                    torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip_norm)\n                optimizer",
        "                    torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip_norm)  # expect: TL014\n"
        "                optimizer",
    )
    check(lint, source, CODE)


# ----- conditions compared in the deepest function both events pass through ---------------------------

_THROUGH_MAIN = """
    import argparse

    import torch


    def train_iteration(model, batch, scaler, optimizer, args):
        loss = model(batch).mean()
        if args.fp16:
            if args.amp == "pytorch":
                scaler.scale(loss).backward()
            elif args.amp == "apex":
                with amp.scale_loss(loss, optimizer) as scaled_loss:
                    scaled_loss.backward()
        else:
            loss.backward()
        return loss.detach()


    def train(model, loader, optimizer, scaler, args):
        model.train()
        for batch in loader:
            optimizer.zero_grad()
            train_iteration(model, batch, scaler, optimizer, args)
            if args.fp16:
                if args.amp == "pytorch":
                    scaler.unscale_(optimizer)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
                elif args.amp == "apex":
                    torch.nn.utils.clip_grad_norm_(amp.master_params(optimizer), args.clip)
            else:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            if args.fp16 and args.amp == "pytorch":
                scaler.step(optimizer)
                scaler.update()
            else:
                optimizer.step()


    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--fp16", action="store_true")
        parser.add_argument("--amp", default="pytorch")
        parser.add_argument("--clip", type=float, default=0.25)
        args = parser.parse_args()
        model = build_model()
        optimizer = torch.optim.Adam(model.parameters())
        train(model, make_loader(), optimizer, torch.cuda.amp.GradScaler(), args)


    if __name__ == "__main__":
        main()
    """


def test_branches_exclusive_inside_train_stay_exclusive_when_walked_from_main(lint):
    # `args` is a local of main(), so the helper's conditions cannot be carried out to the module;
    # they still compare inside train(), the deepest function both the backward and the clips run in.
    assert lint(_THROUGH_MAIN, CODE) == []


def test_clip_on_the_branch_that_scaled_is_reported_when_walked_from_main(lint):
    source = _THROUGH_MAIN.replace(
        """                    scaler.unscale_(optimizer)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)""",
        """                    torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)  # expect: TL014""",
    )
    findings = check(lint, source, CODE)
    assert "scaled backward on line 11" in findings[0].message
