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


def test_test_function_training_over_a_real_loader(lint):
    """A test_* function that asserts on its loss still trains over a data loader: a training run."""
    check(
        lint,
        """
        import torch
        from torch.utils.data import DataLoader

        def test_finetune_converges(model, dataset):
            loader = DataLoader(dataset, batch_size=32, shuffle=True)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for images, labels in loader:
                with torch.autocast("cuda"):
                    loss = torch.nn.functional.cross_entropy(model(images), labels)
                optimizer.zero_grad()
                loss.backward()  # expect: TL018
                optimizer.step()
            assert loss.item() < 1.0
        """,
        CODE,
    )


@pytest.mark.parametrize(
    "target, check_line",
    [
        ("dataset[0][1].cuda()", "assert torch.isfinite(loss)"),  # a target read from a dataset
        ("torch.zeros(8, 10, device='cuda')", "print(loss.item())"),  # synthetic, but no assert: a benchmark
    ],
)
def test_synthetic_input_without_a_check_or_with_data(lint, target, check_line):
    findings = check(
        lint,
        f"""
        import torch

        def run_steps(model, dataset, steps=3):
            optimizer = torch.optim.Adam(model.parameters())
            inputs = torch.randn(8, 64, device="cuda")
            for _ in range(steps):
                with torch.cuda.amp.autocast():
                    loss = torch.nn.functional.mse_loss(model(inputs), {target})
                optimizer.zero_grad()
                loss.backward()  # expect: TL018
                optimizer.step()
            {check_line}
        """,
        CODE,
    )
    assert "torch.cuda.amp.autocast()" in findings[0].message and "line 8" in findings[0].message


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


def test_equivalence_test_on_random_input(lint):
    """Two wrappers trained for a few steps on `torch.randn(...)` and compared: a test of the code."""
    assert not lint(
        """
        import torch
        from torch.nn.parallel import DistributedDataParallel

        def _compare_wrappers(rank, make_head, shard):
            torch.manual_seed(rank)
            features = torch.randn(size=(2, 256)).cuda()
            plain = DistributedDataParallel(make_head().cuda(), device_ids=[rank])
            sharded = shard(make_head().cuda())
            plain_opt = torch.optim.AdamW(plain.parameters())
            sharded_opt = torch.optim.AdamW(sharded.parameters())
            for _ in range(2):
                with torch.cuda.amp.autocast():
                    plain_loss = plain(features)[0].sum()
                    sharded_loss = sharded(features)[0].sum()
                plain_opt.zero_grad()
                sharded_opt.zero_grad()
                plain_loss.backward()
                sharded_loss.backward()
                plain_opt.step()
                sharded_opt.step()
                assert torch.allclose(plain_loss, sharded_loss)
        """,
        CODE,
    )


def test_unittest_step_on_synthetic_batch_and_target(lint):
    assert not lint(
        """
        import unittest
        import torch

        class TestHalfStep(unittest.TestCase):
            def test_one_step_moves_weights(self):
                net = torch.nn.Linear(16, 4).cuda()
                opt = torch.optim.SGD(net.parameters(), lr=1.0)
                before = net.weight.detach().clone()
                batch = torch.rand(4, 16, device="cuda")
                with torch.autocast("cuda", dtype=torch.float16):
                    loss = torch.nn.functional.mse_loss(net(batch), torch.ones(4, 4, device="cuda")) * 0.5
                loss.backward()
                opt.step()
                self.assertFalse(torch.equal(before, net.weight))
        """,
        CODE,
    )
