"""TL009 unscaled-accumulated-loss: gradient accumulation without dividing the loss."""

from expect_markers import check

CODE = "TL009"


# ----- positives ------------------------------------------------------------------------------


def test_modulo_step_without_division(lint):
    findings = check(
        lint,
        """
        def train(model, loader, optimizer, criterion, accum_steps):
            for i, (x, y) in enumerate(loader):
                loss = criterion(model(x), y)
                loss.backward()  # expect: TL009
                if (i + 1) % accum_steps == 0:
                    optimizer.step()
                    optimizer.zero_grad()
        """,
        CODE,
    )
    message = findings[0].message
    assert findings[0].name == "unscaled-accumulated-loss" and findings[0].severity == "error"
    assert "`(i + 1) % accum_steps == 0`" in message and "loss = loss / accum_steps" in message


def test_micro_step_loop_without_division(lint):
    findings = check(
        lint,
        """
        import torch
        scaler = torch.amp.GradScaler("cuda")
        while True:
            for micro_step in range(gradient_accumulation_steps):
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    logits, loss = model(X, Y)
                X, Y = get_batch("train")
                scaler.scale(loss).backward()  # expect: TL009
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
        """,
        CODE,
    )
    assert "micro-step loop" in findings[0].message and "gradient_accumulation_steps" in findings[0].message


def test_division_only_for_logging_does_not_count(lint):
    check(
        lint,
        """
        def train(model, loader, optimizer, accum):
            running = 0.0
            for step, batch in enumerate(loader):
                loss = model(**batch).loss
                loss.backward()  # expect: TL009
                running += loss.item() / accum
                if step % accum == 0:
                    optimizer.step()
                    optimizer.zero_grad()
                    print(f"loss {running:.3f}")
                    running = 0.0
        """,
        CODE,
    )


def test_continue_on_non_update_iterations_without_division(lint):
    findings = check(
        lint,
        """
        def train_one_epoch(model, loader, optimizer, loss_fn, accum_steps):
            for idx, (inp, tgt) in enumerate(loader):
                need_update = (idx + 1) % accum_steps == 0
                loss = loss_fn(model(inp), tgt)
                loss.backward()  # expect: TL009
                if not need_update:
                    continue
                optimizer.step()
                optimizer.zero_grad()
        """,
        CODE,
    )
    assert "early exit on line 8 while `not need_update`" in findings[0].message
    assert "loss = loss / accum_steps" in findings[0].message


def test_counter_in_a_trainer_method(lint):
    findings = check(
        lint,
        """
        import torch
        class Trainer:
            def __init__(self, model, accumulation_steps):
                self.model = model
                self.optimizer = torch.optim.Adam(model.parameters())
                self.accumulation_steps = accumulation_steps
                self.accum_count = 0
            def train_step(self, batch):
                loss = self.model(batch)
                loss.backward()  # expect: TL009
                self.accum_count += 1
                if self.accum_count == self.accumulation_steps:
                    self.optimizer.step()
                    self.optimizer.zero_grad()
                    self.accum_count = 0
        """,
        CODE,
    )
    assert "loss = loss / self.accumulation_steps" in findings[0].message


def test_accelerator_backward_without_accumulation_configured(lint):
    check(
        lint,
        """
        from accelerate import Accelerator
        accelerator = Accelerator(mixed_precision="bf16")
        model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
        for step, batch in enumerate(loader):
            loss = model(**batch).loss
            accelerator.backward(loss)  # expect: TL009
            if step % args.accum == 0:
                optimizer.step()
                optimizer.zero_grad()
        """,
        CODE,
    )


def test_loss_scaler_told_to_update_every_n_without_division(lint):
    check(
        lint,
        """
        def train_one_epoch(model, data_loader, optimizer, loss_scaler, accum_iter):
            for it, (samples, targets) in enumerate(data_loader):
                loss = criterion(model(samples), targets)
                loss_scaler(loss, optimizer, update_grad=(it + 1) % accum_iter == 0)  # expect: TL009
                if (it + 1) % accum_iter == 0:
                    optimizer.zero_grad()
        """,
        CODE,
    )


# ----- hard negatives -------------------------------------------------------------------------------


def test_nanogpt_divides_inside_autocast(lint):
    check(
        lint,
        """
        while True:
            for micro_step in range(gradient_accumulation_steps):
                with ctx:
                    logits, loss = model(X, Y)
                    loss = loss / gradient_accumulation_steps
                X, Y = get_batch("train")
                scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
        """,
        CODE,
    )


def test_every_division_form_counts(lint):
    check(
        lint,
        """
        import torch
        def a(model, loader, opt, n):
            for i, (x, y) in enumerate(loader):
                (criterion(model(x), y) / n).backward()
                if (i + 1) % n == 0:
                    opt.step(); opt.zero_grad()
        def b(model, loader, opt, n, scaler):
            for i, (x, y) in enumerate(loader):
                scaler.scale(model(x, y) / n).backward()
                if (i + 1) % n == 0:
                    scaler.step(opt); scaler.update(); opt.zero_grad()
        def c(model, loader, opt, n):
            for i, (x, y) in enumerate(loader):
                loss = model(x, y)
                loss /= n
                loss.backward()
                if (i + 1) % n == 0:
                    opt.step(); opt.zero_grad()
        def d(model, loader, opt, n):
            for i, (x, y) in enumerate(loader):
                loss = torch.nn.functional.mse_loss(model(x), y).div(n)
                loss.backward()
                if (i + 1) % n == 0:
                    opt.step(); opt.zero_grad()
        def e(model, loader, opt, n):
            scale = 1.0 / n
            for i, (x, y) in enumerate(loader):
                loss = model(x, y) * scale
                loss.backward()
                if (i + 1) % n == 0:
                    opt.step(); opt.zero_grad()
        """,
        CODE,
    )


def test_helper_returning_divided_loss(lint):
    check(
        lint,
        """
        class Trainer:
            def compute_loss(self, batch):
                out = self.model(**batch)
                return out.loss / self.args.gradient_accumulation_steps
            def train(self, loader):
                for step, batch in enumerate(loader):
                    loss = self.compute_loss(batch)
                    loss.backward()
                    if (step + 1) % self.args.gradient_accumulation_steps == 0:
                        self.optimizer.step()
                        self.optimizer.zero_grad()
        """,
        CODE,
    )


def test_timm_forward_closure_divides_backward_closure_gets_it(lint):
    check(
        lint,
        """
        def train_one_epoch(model, loader, optimizer, loss_fn, accum_steps):
            for idx, (inp, tgt) in enumerate(loader):
                need_update = (idx + 1) % accum_steps == 0
                def _forward():
                    _loss = loss_fn(model(inp), tgt)
                    if accum_steps > 1:
                        _loss /= accum_steps
                    return _loss, None
                def _backward(_loss):
                    _loss.backward()
                    if need_update:
                        optimizer.step()
                loss, _ = _forward()
                _backward(loss)
                if not need_update:
                    continue
                optimizer.zero_grad()
        """,
        CODE,
    )


def test_accelerate_accumulate_and_configured_backward(lint):
    check(
        lint,
        """
        from accelerate import Accelerator
        accelerator = Accelerator(gradient_accumulation_steps=8)
        for step, batch in enumerate(loader):
            with accelerator.accumulate(model):
                loss = model(**batch).loss
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                optimizer.zero_grad()
        for step, batch in enumerate(loader):
            loss = model(**batch).loss
            accelerator.backward(loss)
            if step % 8 == 0:
                optimizer.step()
                optimizer.zero_grad()
        """,
        CODE,
    )


def test_deepspeed_engine_scales_itself(lint):
    check(
        lint,
        """
        import deepspeed
        model_engine, optimizer, _, _ = deepspeed.initialize(model=model, config=cfg)
        for step, batch in enumerate(loader):
            loss = model_engine(batch)
            model_engine.backward(loss)
            if step % accum == 0:
                model_engine.step()
        """,
        CODE,
    )


def test_lightning_accumulate_grad_batches(lint):
    check(
        lint,
        """
        import lightning as L
        class LitModel(L.LightningModule):
            def training_step(self, batch, batch_idx):
                x, y = batch
                return torch.nn.functional.cross_entropy(self(x), y)
        trainer = L.Trainer(accumulate_grad_batches=4)
        trainer.fit(LitModel(), loader)
        """,
        CODE,
    )


def test_step_every_iteration_and_periodic_logging(lint):
    # A modulo that gates logging, and a step every iteration: no accumulation.
    check(
        lint,
        """
        def train(model, loader, opt, log_every):
            for i, (x, y) in enumerate(loader):
                opt.zero_grad()
                loss = model(x, y)
                loss.backward()
                opt.step()
                if i % log_every == 0:
                    print(loss.item())
        """,
        CODE,
    )


def test_alternating_gan_updates_are_not_accumulation(lint):
    check(
        lint,
        """
        import torch
        optD = torch.optim.Adam(netD.parameters())
        optG = torch.optim.Adam(netG.parameters())
        for i, real in enumerate(loader):
            optD.zero_grad()
            lossD = netD(netG(z).detach()).mean() - netD(real).mean()
            lossD.backward()
            optD.step()
            if i % n_critic == 0:
                optG.zero_grad()
                lossG = -netD(netG(z)).mean()
                lossG.backward()
                optG.step()
        """,
        CODE,
    )


def test_skipped_steps_with_clear_every_iteration_are_not_accumulation(lint):
    check(
        lint,
        """
        def train(model, loader, opt, warmup):
            for i, (x, y) in enumerate(loader):
                opt.zero_grad()
                model(x, y).backward()
                if i % 2 == 0:
                    opt.step()
        """,
        CODE,
    )


def test_multi_task_losses_in_inner_loop_are_not_micro_steps(lint):
    check(
        lint,
        """
        def train(model, loader, opt, tasks):
            for batch in loader:
                opt.zero_grad()
                for task in tasks:
                    model.head(task)(batch).backward()
                opt.step()
        """,
        CODE,
    )


def test_timm_shape_without_division_is_reported(lint):
    # The step under `if need_update:` inside a closure, the clear after `if not need_update: continue`.
    check(
        lint,
        """
        def train_one_epoch(model, loader, optimizer, loss_fn, accum_steps):
            for idx, (inp, tgt) in enumerate(loader):
                need_update = (idx + 1) % accum_steps == 0
                def _backward(_loss):
                    _loss.backward()  # expect: TL009
                    if need_update:
                        optimizer.step()
                _backward(loss_fn(model(inp), tgt))
                if not need_update:
                    continue
                optimizer.zero_grad()
        """,
        CODE,
    )


def test_accumulation_count_in_a_variable_does_not_configure_the_accelerator(lint):
    # The shape of accelerate's fsdp_with_peak_mem_tracking example: manual accumulation, no division.
    check(
        lint,
        """
        from accelerate import Accelerator
        accelerator = Accelerator(mixed_precision="fp16")
        gradient_accumulation_steps = batch_size // MAX_GPU_BATCH_SIZE
        for step, batch in enumerate(loader):
            loss = model(**batch).loss
            accelerator.backward(loss)  # expect: TL009
            if step % gradient_accumulation_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
        """,
        CODE,
    )


def test_step_at_accelerate_window_end_without_accumulate_block(lint):
    check(
        lint,
        """
        for batch in loader:
            loss = model(**batch).loss
            accelerator.backward(loss)
            if accelerator.sync_gradients:
                optimizer.step()
                optimizer.zero_grad()
        """,
        CODE,
    )


# ----- family: division the rule cannot see; losses summed over the batch on purpose ------------


def test_loss_divided_under_a_condition_then_cast_for_the_type_checker(lint):
    check(
        lint,
        """
        from typing import cast

        import torch

        def train_one_epoch(model, loader, optimizer, scaler, grad_accum_steps):
            for step, (images, labels) in enumerate(loader):
                with torch.autocast("cuda", dtype=torch.float16):
                    loss = torch.nn.functional.cross_entropy(model(images), labels)
                if grad_accum_steps > 1:
                    loss = loss / grad_accum_steps
                cast(torch.Tensor, scaler.scale(loss)).backward()
                if (step + 1) % grad_accum_steps == 0:
                    scaler.step(optimizer)
                    scaler.update()
                    optimizer.zero_grad(set_to_none=True)
        """,
        CODE,
    )


def test_cast_of_an_undivided_loss_is_still_reported(lint):
    findings = check(
        lint,
        """
        import typing

        import torch

        def train_one_epoch(model, loader, optimizer, scaler, grad_accum_steps):
            for step, (images, labels) in enumerate(loader):
                loss = torch.nn.functional.cross_entropy(model(images), labels)
                typing.cast(torch.Tensor, scaler.scale(loss)).backward()  # expect: TL009
                if (step + 1) % grad_accum_steps == 0:
                    scaler.step(optimizer)
                    scaler.update()
                    optimizer.zero_grad(set_to_none=True)
        """,
        CODE,
    )
    assert "but `loss` is not divided" in findings[0].message


def test_loss_summed_over_a_nominal_batch_is_scaled_on_purpose(lint):
    # YOLO-style: the loss is the sum over the batch (mean * batch size) and the optimizer steps
    # once every `nbs // batch_size` batches: the gradient is the sum over a nominal batch.
    check(
        lint,
        """
        import torch
        import torch.nn.functional as F

        def compute_loss(pred, targets):
            bs = pred.shape[0]
            lbox = F.smooth_l1_loss(pred[..., :4], targets[..., :4])
            lcls = F.binary_cross_entropy_with_logits(pred[..., 4:], targets[..., 4:])
            return (lbox + lcls) * bs, torch.stack((lbox, lcls)).detach()

        def train(model, loader, optimizer, batch_size, nbs=64, epochs=300):
            accumulate = max(round(nbs / batch_size), 1)
            last_opt_step = -1
            for epoch in range(epochs):
                for i, (imgs, targets) in enumerate(loader):
                    ni = i + len(loader) * epoch
                    loss, loss_items = compute_loss(model(imgs), targets)
                    loss.backward()
                    if ni - last_opt_step >= accumulate:
                        optimizer.step()
                        optimizer.zero_grad()
                        last_opt_step = ni
        """,
        CODE,
    )


def test_sum_reduction_on_the_criterion_or_the_call(lint):
    check(
        lint,
        """
        import torch.nn as nn
        import torch.nn.functional as F

        def train(model, loader, optimizer, accum):
            criterion = nn.CrossEntropyLoss(reduction="sum")
            for i, (x, y) in enumerate(loader):
                criterion(model(x), y).backward()
                F.mse_loss(model.aux(x), y.float(), reduction="sum").backward()
                if (i + 1) % accum == 0:
                    optimizer.step()
                    optimizer.zero_grad()
        """,
        CODE,
    )


def test_loss_multiplied_by_a_weight_is_still_reported(lint):
    check(
        lint,
        """
        import torch.nn.functional as F

        def train(model, loader, optimizer, accum):
            for i, (x, y) in enumerate(loader):
                out, aux = model(x)
                loss = F.cross_entropy(out, y) + F.cross_entropy(aux, y) * 0.4
                loss.backward()  # expect: TL009
                if (i + 1) % accum == 0:
                    optimizer.step()
                    optimizer.zero_grad()
        """,
        CODE,
    )


# ----- miss: the division only in the logged numbers -------------------------------------------


def test_division_only_in_the_logged_running_loss_of_a_micro_step_loop(lint):
    check(
        lint,
        """
        def train(model, loader, optimizer, grad_accum_steps, max_steps):
            for step in range(max_steps):
                optimizer.zero_grad(set_to_none=True)
                loss_accum = 0.0
                for micro_step in range(grad_accum_steps):
                    x, y = loader.next_batch()
                    logits, loss = model(x, y)
                    loss_accum += loss.detach() / grad_accum_steps
                    loss.backward()  # expect: TL009
                optimizer.step()
                print(f"step {step}: loss {loss_accum.item():.4f}")
        """,
        CODE,
    )


def test_division_in_the_backpropagated_loss_and_the_log_multiplies_back(lint):
    check(
        lint,
        """
        def train(model, loader, optimizer, grad_accum_steps, max_steps):
            for step in range(max_steps):
                optimizer.zero_grad(set_to_none=True)
                loss_accum = 0.0
                for micro_step in range(grad_accum_steps):
                    x, y = loader.next_batch()
                    logits, loss = model(x, y)
                    loss = loss / grad_accum_steps
                    loss_accum += loss.detach() * grad_accum_steps
                    loss.backward()
                optimizer.step()
        """,
        CODE,
    )


def test_loss_object_of_a_local_class_is_followed_into_its_call(lint):
    check(
        lint,
        """
        import torch.nn.functional as F

        class SumLoss:
            def __call__(self, pred, target):
                return F.l1_loss(pred, target) * pred.size(0)

        class MeanLoss:
            def __call__(self, pred, target):
                return F.l1_loss(pred, target)

        def train(model, loader, optimizer, accumulate):
            summed, averaged = SumLoss(), MeanLoss()
            for i, (x, y) in enumerate(loader):
                summed(model(x), y).backward()
                averaged(model(x), y).backward()  # expect: TL009
                if (i + 1) % accumulate == 0:
                    optimizer.step()
                    optimizer.zero_grad()
        """,
        CODE,
    )


# ----- sums over samples, and a normaliser computed over the whole window -----------------------
# A loss summed over its samples (per-sample losses, `reduction="none"`, then `.sum()`, possibly
# weighted by a mask) accumulates into the sum over the nominal batch: the step is not "N times the
# mean" of anything. A mean of the same per-sample losses is a mean, and accumulating it undivided
# stays a finding.


def test_per_sample_losses_summed_accumulate_into_the_nominal_batch_sum(lint):
    check(
        lint,
        """
        import torch.nn as nn
        import torch.nn.functional as F

        def train(model, loader, optimizer, accum):
            token_loss = nn.CrossEntropyLoss(reduction="none")
            for i, (x, y, mask) in enumerate(loader):
                logits = model(x)
                per_sample = F.cross_entropy(logits, y, reduction="none")
                per_sample.sum().backward()
                (token_loss(logits, y) * mask).sum().backward()
                if (i + 1) % accum == 0:
                    optimizer.step()
                    optimizer.zero_grad()
        """,
        CODE,
    )


def test_per_sample_losses_averaged_are_a_mean_and_still_reported(lint):
    check(
        lint,
        """
        import torch.nn.functional as F

        def train(model, loader, optimizer, accum):
            for i, (x, y, mask) in enumerate(loader):
                per_sample = F.cross_entropy(model(x), y, reduction="none")
                per_sample.mean().backward()  # expect: TL009
                if (i + 1) % accum == 0:
                    optimizer.step()
                    optimizer.zero_grad()
        """,
        CODE,
    )


# The token count of every micro-batch of the window, computed before the micro-steps, divides
# each micro-batch's summed token loss (through a masked-mean helper that guards an empty mask):
# the accumulated gradient is the window's token mean.
_WINDOW_NORMALISED = """
    import torch

    def masked_mean(values, mask, axis=None, denominator=None):
        numerator = (values * mask).sum(dim=axis)
        denom = mask.sum(dim=axis) if denominator is None else denominator
        if isinstance(denom, torch.Tensor):
            result = torch.where(denom > 0, numerator / denom, torch.zeros_like(numerator))
        else:
            result = numerator / denom if denom > 0 else torch.zeros_like(numerator)
        return result.flatten(1).mean(-1) if result.ndim > 1 else result

    def window_token_counts(masks, accumulation_steps):
        counts = {}
        for i, mask in enumerate(masks):
            start = (i // accumulation_steps) * accumulation_steps
            counts[start] = counts.get(start, 0.0) + mask.sum().item()
        return counts

    def train_step(model, optim, batches, masks, accumulation_steps):
        counts = window_token_counts(masks, accumulation_steps)
        for i, (batch, mask) in enumerate(zip(batches, masks)):
            token_loss = model(batch)
            window_start = (i // accumulation_steps) * accumulation_steps
            loss = masked_mean(token_loss, mask, None, counts[window_start])
            loss.backward()
            if (i + 1) % accumulation_steps == 0:
                optim.step()
                optim.zero_grad(set_to_none=True)
    """


def test_loss_divided_by_the_windows_token_count_through_a_masked_mean_helper(lint):
    assert lint(_WINDOW_NORMALISED, CODE) == []


def test_a_helper_that_returns_an_undivided_loss_on_every_branch_is_reported(lint):
    undivided = _WINDOW_NORMALISED.replace(
        "            loss = masked_mean(token_loss, mask, None, counts[window_start])\n            loss.backward()\n",
        "            loss = masked_sum(token_loss, mask)\n            loss.backward()  # expect: TL009\n",
    ).replace(
        "    def window_token_counts",
        "    def masked_sum(values, mask, axis=None):\n"
        "        picked = values * mask\n"
        "        return picked.flatten(1).mean(-1) if picked.ndim > 1 else torch.where(mask > 0, picked, 0.0).mean()\n\n"
        "    def window_token_counts",
    )
    check(lint, undivided, CODE)


# ----- gradients divided in place instead of the loss -------------------------------------------

_CHUNKED_STEP = """
    import torch

    def fit_epoch(net, loader, opt, loss_fn, chunks):
        net.train()
        for images, labels in loader:
            opt.zero_grad()
            for piece, target in zip(images.chunk(chunks), labels.chunk(chunks)):
                loss = loss_fn(net(piece), target)
                loss.backward()
            SCALING
            opt.step()
"""


def test_gradients_divided_in_place_before_the_step_count_as_dividing(lint):
    for scaling in (
        "for weight in net.parameters():\n                weight.grad.data.div_(chunks)",
        "for weight in net.parameters():\n                weight.grad /= chunks",
        "for _, weight in net.named_parameters():\n                weight.grad.mul_(1.0 / chunks)",
        "for weight in net.parameters():\n                weight.grad = weight.grad / chunks",
    ):
        assert lint(_CHUNKED_STEP.replace("SCALING", scaling), CODE) == [], scaling


def test_gradients_scaled_but_not_divided_or_not_before_the_step_are_still_reported(lint):
    for scaling in (
        "for weight in net.parameters():\n                weight.grad.mul_(len(images))",  # a product, no division
        "weight = next(net.parameters())\n            weight.grad.div_(chunks)",  # one parameter, not every one
        "pass",
    ):
        source = _CHUNKED_STEP.replace("SCALING", scaling).replace(
            "loss.backward()", "loss.backward()  # expect: TL009"
        )
        findings = check(lint, source, CODE)
        assert "`loss` is not divided by the number of accumulated steps" in findings[0].message


def test_gradients_divided_after_the_step_do_not_count(lint):
    source = _CHUNKED_STEP.replace("SCALING\n            opt.step()", "opt.step()\n            SCALING").replace(
        "SCALING", "for weight in net.parameters():\n                weight.grad.div_(chunks)"
    )
    check(lint, source.replace("loss.backward()", "loss.backward()  # expect: TL009"), CODE)


# ----- a loss module whose forward sums over the samples ----------------------------------------

_SUMMED_DETECTION_LOSS = """
    import torch
    import torch.nn.functional as F
    from torch import nn

    class BoxLoss(nn.Module):
        def forward(self, pred, target):
            total_xy, total_conf = 0, 0
            for level, out in enumerate(pred):
                total_xy += F.mse_loss(out[..., :2], target[level][..., :2], reduction=REDUCTION)
                total_conf += F.binary_cross_entropy(out[..., 4], target[level][..., 4], reduction=REDUCTION)
            return total_xy + total_conf, total_xy, total_conf

    def train(detector, loader, cfg):
        opt = torch.optim.SGD(detector.parameters(), lr=cfg.lr / cfg.batch)
        loss_module = BoxLoss()
        for it, (images, boxes) in enumerate(loader):
            loss, xy, conf = loss_module(detector(images), boxes)
            loss.backward()
            if (it + 1) % cfg.subdivisions == 0:
                opt.step()
                opt.zero_grad()
"""


def test_a_loss_modules_forward_summing_over_samples_is_followed(lint):
    assert lint(_SUMMED_DETECTION_LOSS.replace("REDUCTION", '"sum"'), CODE) == []


def test_a_loss_modules_forward_averaging_is_still_reported(lint):
    source = _SUMMED_DETECTION_LOSS.replace("REDUCTION", '"mean"').replace(
        "loss.backward()", "loss.backward()  # expect: TL009"
    )
    findings = check(lint, source, CODE)
    assert "`opt.step()` (line 21) runs only when `(it + 1) % cfg.subdivisions == 0`" in findings[0].message


# ----- a backward handed an explicit upstream gradient --------------------------------------------

_UPSTREAM_GRADIENT = """
    import torch

    def compare_accumulation(net, opt, batches, micro_steps):
        for inputs in batches:
            opt.zero_grad()
            for k in range(micro_steps):
                out = net(inputs[k])
                BACKWARD
            opt.step()
"""


def test_model_output_backward_with_an_upstream_gradient_is_silent(lint):
    # `out.backward(grad_out)`: the caller picks the gradient flowing into the output; no mean loss.
    source = _UPSTREAM_GRADIENT.replace("BACKWARD", "out.backward(torch.rand_like(out) - 0.5)")
    assert lint(source, CODE) == []
    keyword = _UPSTREAM_GRADIENT.replace("BACKWARD", "out.backward(gradient=torch.ones_like(out))")
    assert lint(keyword, CODE) == []


def test_mean_loss_of_the_model_output_is_still_reported(lint):
    source = _UPSTREAM_GRADIENT.replace("BACKWARD", "out.mean().backward()  # expect: TL009")
    findings = check(lint, source, CODE)
    assert findings[0].line == 9
    assert "micro-step loop, line 7" in findings[0].message


def test_accelerator_backward_of_a_loss_is_still_reported(lint):
    source = _UPSTREAM_GRADIENT.replace(
        "BACKWARD", "loss = out.pow(2).mean()\n                accelerator.backward(loss)  # expect: TL009"
    )
    findings = check(lint, source, CODE)
    assert "`accelerator.backward(loss)`" in findings[0].message and "`loss` is not divided" in findings[0].message


# ----- a backward under the step's own condition runs once per update ---------------------------


def test_regulariser_backward_under_the_step_condition_is_not_accumulated(lint):
    # The penalty's backward runs only on update iterations (its guard implies the step's), so
    # it adds one gradient per update: dividing it would weaken it. The task loss is divided.
    check(
        lint,
        """
        import torch
        class Continual:
            def train_batch(self, x, y):
                loss = torch.nn.functional.cross_entropy(self.net(x), y) / self.accum
                loss.backward()
                if self.use_penalty and self.it > 0 and self.it % self.accum == 0:
                    penalty = self.penalty_weight * self.drift()
                    penalty.backward()
                if self.it > 0 and self.it % self.accum == 0:
                    self.opt.step()
                    self.opt.zero_grad()
                self.it += 1
        """,
        CODE,
    )


def test_backward_under_only_part_of_the_step_condition_is_reported(lint):
    # `self.it > 0` alone does not imply the update condition: this backward runs on every
    # micro-batch after the first and its gradients pile up undivided.
    findings = check(
        lint,
        """
        import torch
        class Continual:
            def train_batch(self, x, y):
                loss = torch.nn.functional.cross_entropy(self.net(x), y) / self.accum
                loss.backward()
                if self.use_penalty and self.it > 0:
                    penalty = self.penalty_weight * self.drift()
                    penalty.backward()  # expect: TL009
                if self.it > 0 and self.it % self.accum == 0:
                    self.opt.step()
                    self.opt.zero_grad()
                self.it += 1
        """,
        CODE,
    )
    assert "`penalty.backward()` accumulates gradients" in findings[0].message
    assert "self.it % self.accum == 0" in findings[0].message


def test_backward_under_the_other_branch_of_a_conjunct_is_reported(lint):
    check(
        lint,
        """
        def train(model, loader, optimizer, accum):
            for i, (x, y) in enumerate(loader):
                if not (i % accum == 0):
                    model(x).sub(y).abs().mean().backward()  # expect: TL009
                else:
                    (model(x).sub(y).abs().mean() / accum).backward()
                if i % accum == 0:
                    optimizer.step()
                    optimizer.zero_grad()
        """,
        CODE,
    )


# ----- inner loops over one batch: a multi-term objective, or micro-batches -------------------


def test_inner_loop_over_the_same_batch_is_one_objective(lint):
    # Every pass samples another path of the supernet on the batch drawn by the outer loop: the
    # summed backwards are the terms of one objective, not micro-batches of a larger batch.
    check(
        lint,
        """
        import torch
        def train_epoch(model, loader, optimizer, criterion, args):
            for images, labels in loader:
                images, labels = images.cuda(), labels.cuda()
                optimizer.zero_grad()
                for _ in range(args.path_accumulation_steps):
                    model.sample_path()
                    logits = model(images)
                    noisy = images + 0.01 * torch.randn(images.size()).cuda()
                    loss = criterion(logits, labels) + 0.5 * criterion(model(noisy), labels)
                    loss = loss + 0.1 * max(0, loss.item() - 1.0)
                    loss.backward()
                optimizer.step()
        """,
        CODE,
    )


def test_inner_loop_drawing_a_batch_each_pass_is_reported(lint):
    findings = check(
        lint,
        """
        def train(model, data_iter, optimizer, criterion, steps, accum_steps):
            for step in range(steps):
                optimizer.zero_grad()
                for _ in range(accum_steps):
                    inputs, targets = next(data_iter)
                    loss = criterion(model(inputs), targets)
                    loss.backward()  # expect: TL009
                optimizer.step()
        """,
        CODE,
    )
    assert "micro-step loop, line 5" in findings[0].message and "loss = loss / accum_steps" in findings[0].message


def test_inner_loop_indexing_by_its_variable_is_reported(lint):
    check(
        lint,
        """
        def train(model, loader, optimizer, criterion, accum_chunks):
            for x, y in loader:
                optimizer.zero_grad()
                xs, ys = x.chunk(accum_chunks), y.chunk(accum_chunks)
                for k in range(accum_chunks):
                    loss = criterion(model(xs[k]), ys[k])
                    loss.backward()  # expect: TL009
                optimizer.step()
        """,
        CODE,
    )


def test_inner_loop_picking_random_samples_is_reported(lint):
    check(
        lint,
        """
        import torch
        def train(model, data, labels, optimizer, criterion, iters, micro_steps):
            for it in range(iters):
                for _ in range(micro_steps):
                    idx = torch.randint(len(data), (32,))
                    loss = criterion(model(data[idx]), labels[idx])
                    loss.backward()  # expect: TL009
                optimizer.step()
                optimizer.zero_grad()
        """,
        CODE,
    )


# ----- a project loss that sums over its pairs, split for memory --------------------------------
# A loss module (or function) of the project whose `forward` returns a full sum of unaveraged terms
# is a sum over its samples: backward per tuple, one step per `update_every` batches, adds up to the
# sum over the larger batch, its intended scale. Which module runs may be chosen by an option and
# handed to the training function; every one of them must sum. A module that averages stays reported.


_PAIR_LOSSES = """
import torch
import torch.nn as nn

def hinge_pairs(anchor, other, same, margin):
    dist = (anchor - other).pow(2).sum(dim=0).sqrt()
    per_pair = same * dist.pow(2) + (1 - same) * torch.clamp(margin - dist, min=0).pow(2)
    return torch.sum(per_pair)

class PairHinge(nn.Module):
    def __init__(self, margin=0.5):
        super().__init__()
        self.margin = margin
    def forward(self, anchor, other, same):
        return hinge_pairs(anchor, other, same, self.margin)

class RankedTriplets(nn.Module):
    def forward(self, anchor, pos, neg):
        gap = (anchor - pos).pow(2).sum(0) - (anchor - neg).pow(2).sum(0) + 0.1
        return 0.5 * gap.clamp(min=0).sum()

class AveragedHinge(nn.Module):
    def forward(self, anchor, other, same):
        per_pair = (same * (anchor - other).norm(dim=0)).mean()
        return per_pair.sum()
"""


def test_project_loss_module_returning_a_sum_is_accumulated_on_purpose(lint):
    check(
        lint,
        _PAIR_LOSSES
        + """
def fit_epoch(net, batches, criterion, optimizer, update_every):
    optimizer.zero_grad()
    for i, (tuples, same) in enumerate(batches):
        for anchor, other in tuples:
            loss = criterion(net(anchor), net(other), same)
            loss.backward()
        if (i + 1) % update_every == 0:
            optimizer.step()
            optimizer.zero_grad()

def main(net, batches, optimizer, args):
    criterion = (PairHinge(args.margin) if args.loss == "pairs" else RankedTriplets()).cuda()
    fit_epoch(net, batches, criterion, optimizer, args.update_every)
""",
        CODE,
    )


def test_project_loss_module_that_averages_is_reported(lint):
    findings = check(
        lint,
        _PAIR_LOSSES
        + """
def fit_epoch(net, batches, criterion, optimizer, update_every):
    for i, (tuples, same) in enumerate(batches):
        for anchor, other in tuples:
            loss = criterion(net(anchor), net(other), same)
            loss.backward()  # expect: TL009
        if (i + 1) % update_every == 0:
            optimizer.step()
            optimizer.zero_grad()

def main(net, batches, optimizer, args):
    criterion = PairHinge(args.margin) if args.loss == "pairs" else AveragedHinge()
    fit_epoch(net, batches, criterion, optimizer, args.update_every)
""",
        CODE,
    )
    assert "`loss` is not divided by the number of accumulated steps" in findings[0].message


def test_project_loss_function_summing_a_mean_is_reported(lint):
    # `torch.stack([...means]).sum()` adds means: the result is still a mean over the samples.
    check(
        lint,
        """
        import torch
        import torch.nn.functional as F

        def two_heads(out_a, out_b, y):
            return torch.stack([F.cross_entropy(out_a, y), F.cross_entropy(out_b, y)]).sum()

        def fit(model, loader, optimizer, accumulate):
            for i, (x, y) in enumerate(loader):
                a, b = model(x)
                two_heads(a, b, y).backward()  # expect: TL009
                if (i + 1) % accumulate == 0:
                    optimizer.step()
                    optimizer.zero_grad()
        """,
        CODE,
    )
