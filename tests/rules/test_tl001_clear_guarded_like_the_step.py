"""TL001: a clear whose conditions the step's own conditions force runs on every iteration that
steps; a counter the step resets to the value the clear's test compares it with opens each window
with a clear; code under a branch that never runs (``if False:``) is not judged; and an optimizer
over a copy of a freshly detached tensor starts from empty gradients."""

from expect_markers import check

CODE = "TL001"


# ----- the step's conditions force the clear's ---------------------------------------------------


def test_clear_under_a_weaker_condition_than_the_step_is_silent(lint):
    check(
        lint,
        """
        def run_epoch(cfg, model, loader, optimizer, loss_fn):
            for idx, (feats, target) in enumerate(loader):
                if optimizer is not None:
                    if cfg.accum_steps > 1:
                        if idx % cfg.accum_steps == 0:
                            optimizer.zero_grad()
                    else:
                        optimizer.zero_grad()
                loss = loss_fn(model(feats), target)
                if optimizer is not None and loss.requires_grad:
                    if cfg.accum_steps > 1:
                        (loss / cfg.accum_steps).backward()
                        if (idx + 1) % cfg.accum_steps == 0:
                            optimizer.step()
                    else:
                        loss.backward()
                        optimizer.step()
        """,
        CODE,
    )


def test_clear_under_a_stronger_condition_than_the_step_is_reported(lint):
    check(
        lint,
        """
        def run_epoch(model, loader, optimizer, loss_fn, warmup):
            for idx, (feats, target) in enumerate(loader):
                if optimizer is not None and idx >= warmup:
                    optimizer.zero_grad()
                loss = loss_fn(model(feats), target)
                if optimizer is not None:
                    loss.backward()
                    optimizer.step()  # expect: TL001
        """,
        CODE,
    )


def test_condition_rebound_between_clear_and_step_is_reported(lint):
    check(
        lint,
        """
        def run_epoch(model, loader, optimizer, loss_fn, schedule):
            for idx, (feats, target) in enumerate(loader):
                active = schedule(idx)
                if active:
                    optimizer.zero_grad()
                active = schedule(idx + 1)
                loss = loss_fn(model(feats), target)
                loss.backward()
                if active and loss.requires_grad:
                    optimizer.step()  # expect: TL001
        """,
        CODE,
    )


# ----- a window counter reset to what the clear's test compares it with ---------------------------


def test_countdown_reset_to_the_window_size_opens_each_window_with_a_clear(lint):
    check(
        lint,
        """
        class Trainer:
            def train_epoch(self, model, loader, optimizer, loss_fn):
                model.train()
                left = self.cfg.update_every
                for batch in loader:
                    if left == self.cfg.update_every:
                        optimizer.zero_grad()
                    left -= 1
                    loss = loss_fn(model(batch["x"]), batch["y"])
                    loss.backward()
                    if not left:
                        optimizer.step()
                        left = self.cfg.update_every
        """,
        CODE,
    )


def test_countdown_reset_to_another_value_is_reported(lint):
    check(
        lint,
        """
        class Trainer:
            def train_epoch(self, model, loader, optimizer, loss_fn):
                model.train()
                left = self.cfg.update_every
                for batch in loader:
                    if left == self.cfg.update_every:
                        optimizer.zero_grad()
                    left -= 1
                    loss = loss_fn(model(batch["x"]), batch["y"])
                    loss.backward()
                    if not left:
                        optimizer.step()  # expect: TL001
                        left = self.cfg.update_every - 1
        """,
        CODE,
    )


# ----- a branch that never runs ---------------------------------------------------------------------


def test_optimizer_loop_under_if_false_is_not_judged(lint):
    check(
        lint,
        """
        import torch
        from scipy.optimize import minimize

        def register(objective, start, steps):
            if False:  # gradient descent, kept for reference
                params = start.clone().requires_grad_(True)
                opt = torch.optim.SGD([params], lr=0.01)
                for _ in range(steps):
                    value = objective(params)
                    value.backward()
                    opt.step()
                return params.detach()
            else:
                return minimize(lambda p: objective(torch.tensor(p)).item(), start.numpy()).x
        """,
        CODE,
    )


def test_optimizer_loop_under_a_live_flag_is_reported(lint):
    check(
        lint,
        """
        import torch
        from scipy.optimize import minimize

        def register(objective, start, steps, use_torch):
            if use_torch:
                params = start.clone().requires_grad_(True)
                opt = torch.optim.SGD([params], lr=0.01)
                for _ in range(steps):
                    value = objective(params)
                    value.backward()
                    opt.step()  # expect: TL001
                return params.detach()
            return minimize(lambda p: objective(torch.tensor(p)).item(), start.numpy()).x
        """,
        CODE,
    )


# ----- a fresh leaf copied from a detached tensor -------------------------------------------------


def test_optimizer_over_a_clone_of_a_detached_latent_each_step_is_silent(lint):
    check(
        lint,
        """
        import torch

        def guided_denoise(unet, scheduler, latents, timesteps, guidance_loss, lr):
            for t in timesteps:
                x_in = latents.detach().clone()
                x_in.requires_grad = True
                opt = torch.optim.SGD([x_in], lr=lr)
                with torch.enable_grad():
                    loss = guidance_loss(unet(x_in, t))
                    loss.backward()
                    opt.step()
                noise = unet(x_in.detach(), t)
                latents = scheduler.step(noise, t, x_in.detach())
            return latents
        """,
        CODE,
    )


def test_optimizer_over_a_clone_of_a_latent_kept_across_steps_is_reported(lint):
    check(
        lint,
        """
        import torch

        def guided_denoise(unet, scheduler, latents, timesteps, guidance_loss, lr):
            x_in = latents.detach().clone()
            x_in.requires_grad = True
            opt = torch.optim.SGD([x_in], lr=lr)
            for t in timesteps:
                with torch.enable_grad():
                    loss = guidance_loss(unet(x_in, t))
                    loss.backward()
                    opt.step()  # expect: TL001
            return x_in.detach()
        """,
        CODE,
    )
