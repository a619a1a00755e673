"""TL018 fp16-without-grad-scaler: float16 autocast training with no GradScaler."""

import pytest
from expect_markers import check

CODE = "TL018"


# ----- positives ------------------------------------------------------------------------------


def test_cuda_autocast_default_dtype(lint):
    findings = check(
        lint,
        """
        import torch
        for x, y in loader:
            optimizer.zero_grad()
            with torch.autocast(device_type="cuda"):
                logits = model(x)
                loss = criterion(logits, y)
            loss.backward()  # expect: TL018
            optimizer.step()
        """,
        CODE,
    )
    message = findings[0].message
    assert 'torch.autocast(device_type="cuda")' in message and "line 5" in message
    assert "GradScaler" in message and "bfloat16" in message
    assert findings[0].severity == "warning" and findings[0].name == "fp16-without-grad-scaler"


@pytest.mark.parametrize(
    "autocast",
    [
        "autocast()",
        "autocast(enabled=args.amp)",
        "torch.amp.autocast('cuda', dtype=torch.float16)",
        "torch.autocast('cpu', dtype=torch.half)",
    ],
)
def test_float16_spellings(lint, autocast):
    check(
        lint,
        f"""
        import torch
        from torch.cuda.amp import autocast
        def train_one_epoch(model, optimizer, loader, args):
            model.train()
            for images, target in loader:
                with {autocast}:
                    loss = model(images).log_softmax(-1).gather(1, target[:, None]).mean().neg()
                optimizer.zero_grad()
                loss.backward()  # expect: TL018
                optimizer.step()
        """,
        CODE,
    )


def test_backward_inside_autocast_block(lint):
    check(
        lint,
        """
        import torch
        def step(model, opt, x):
            with torch.autocast("cuda", torch.float16):
                model(x).float().mean().backward()  # expect: TL018
            opt.step()
        """,
        CODE,
    )


def test_autocast_context_held_in_variable(lint):
    check(
        lint,
        """
        import torch
        amp_ctx = torch.amp.autocast(device_type="cuda", dtype=torch.float16)
        for it in range(1000):
            with amp_ctx:
                loss = model(*get_batch())
            loss.backward()  # expect: TL018
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        """,
        CODE,
    )


def test_backward_in_local_helper(lint):
    check(
        lint,
        """
        import torch
        def backward_pass(loss):
            loss.backward()  # expect: TL018
        def train(model, optimizer, loader):
            for x in loader:
                with torch.cuda.amp.autocast():
                    loss = model(x).mean()
                backward_pass(loss)
                optimizer.step()
        """,
        CODE,
    )


# ----- hard negatives -------------------------------------------------------------------------


def test_bf16_autocast_needs_no_scaler(lint):
    assert not lint(
        """
        import torch
        def train(model, optimizer, loader):
            for x in loader:
                with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                    loss = model(x).mean()
                loss.backward()
                optimizer.step()
        """,
        CODE,
    )


@pytest.mark.parametrize(
    "autocast", ["torch.autocast('cpu')", "torch.cpu.amp.autocast()", "torch.autocast(device_type=dev)"]
)
def test_cpu_or_unknown_device_autocast(lint, autocast):
    assert not lint(
        f"""
        import torch
        def train(model, optimizer, loader, dev):
            for x in loader:
                with {autocast}:
                    loss = model(x).mean()
                loss.backward()
                optimizer.step()
        """,
        CODE,
    )


def test_grad_scaler_enabled_flag_like_nanogpt(lint):
    assert not lint(
        """
        import torch
        ptdtype = torch.float16
        scaler = torch.cuda.amp.GradScaler(enabled=True)
        ctx = torch.amp.autocast(device_type="cuda", dtype=ptdtype)
        while True:
            with ctx:
                logits, loss = model(X, Y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        """,
        CODE,
    )


def test_scaler_created_in_init_used_in_method(lint):
    assert not lint(
        """
        import torch
        class Trainer:
            def __init__(self, model, optimizer):
                self.model, self.optimizer = model, optimizer
                self.scaler = torch.amp.GradScaler("cuda")
            def train_step(self, batch):
                with torch.autocast("cuda"):
                    loss = self.model(batch)
                if self.scaler is not None:
                    self.scaler.scale(loss).backward()
                    self.scaler.step(self.optimizer)
                    self.scaler.update()
                else:
                    loss.backward()
                    self.optimizer.step()
        """,
        CODE,
    )


def test_framework_backward_scales_for_you(lint):
    assert not lint(
        """
        import torch
        def train(accelerator, model, optimizer, loader):
            for x in loader:
                with torch.autocast("cuda"):
                    loss = model(x).mean()
                accelerator.backward(loss)
                optimizer.step()
        """,
        CODE,
    )


def test_timm_style_loss_scaler_helper(lint):
    assert not lint(
        """
        import torch
        def train(model, optimizer, loader, loss_scaler):
            for x in loader:
                with torch.cuda.amp.autocast():
                    loss = model(x).mean()
                loss_scaler(loss, optimizer, parameters=model.parameters())
        """,
        CODE,
    )


def test_autocast_disabled_or_eval_only(lint):
    assert not lint(
        """
        import torch
        def train(model, optimizer, loader):
            for x in loader:
                with torch.autocast("cuda", enabled=False):
                    loss = model(x).mean()
                with torch.autocast("cuda"):
                    preview = model(x).argmax(-1)
                loss.backward()
                optimizer.step()
        """,
        CODE,
    )


def test_autograd_check_without_optimizer(lint):
    assert not lint(
        """
        import torch
        def test_grad_flows(layer, x):
            with torch.autocast("cuda", dtype=torch.float16):
                loss = layer(x).mean()
            loss.backward()
            assert layer.weight.grad is not None
        """,
        CODE,
    )


def test_apex_scale_loss_context(lint):
    assert not lint(
        """
        import torch
        from apex import amp
        def train(model, optimizer, loader):
            for x in loader:
                with torch.cuda.amp.autocast():
                    loss = model(x).mean()
                    with amp.scale_loss(loss, optimizer) as scaled_loss:
                        scaled_loss.backward()
                optimizer.step()
        """,
        CODE,
    )
