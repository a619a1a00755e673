"""TL002 zero-grad-after-backward: gradients cleared between the last backward and the step."""

from expect_markers import check
from project_helpers import lint_in_project

CODE = "TL002"


# ----- positives ------------------------------------------------------------------------------


def test_clear_between_backward_and_step(lint):
    findings = check(
        lint,
        """
        def train(model, loader, optimizer, criterion):
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.zero_grad()  # expect: TL002
                optimizer.step()
        """,
        CODE,
    )
    message = findings[0].message
    assert findings[0].name == "zero-grad-after-backward" and findings[0].severity == "error"
    assert "`loss.backward()` (line 5)" in message and "`optimizer.step()` (line 7)" in message
    assert "zeroed gradients" in message


def test_model_zero_grad_between_scaled_backward_and_scaler_step(lint):
    check(
        lint,
        """
        import torch
        scaler = torch.amp.GradScaler("cuda")
        optimizer = torch.optim.AdamW(model.parameters())
        for batch in loader:
            with torch.autocast("cuda"):
                loss = model(**batch).loss
            scaler.scale(loss).backward()
            model.zero_grad(set_to_none=True)  # expect: TL002
            scaler.step(optimizer)
            scaler.update()
        """,
        CODE,
    )


def test_clear_inside_helper_called_between(lint):
    findings = check(
        lint,
        """
        class Trainer:
            def _prepare_update(self):
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
                self.optimizer.zero_grad()
            def train_step(self, batch):
                loss = self.model(batch)
                loss.backward()
                self._prepare_update()  # expect: TL002
                self.optimizer.step()
        """,
        CODE,
    )
    assert findings[0].message.startswith(
        "`self._prepare_update()` (which runs `self.optimizer.zero_grad()` at line 5) runs after `loss.backward()`"
    )


def test_clear_after_backward_inside_micro_step_loop(lint):
    check(
        lint,
        """
        for it in range(max_iters):
            for micro_step in range(accum):
                loss = model(*get_batch()) / accum
                loss.backward()
                optimizer.zero_grad(set_to_none=True)  # expect: TL002
            optimizer.step()
        """,
        CODE,
    )


def test_clear_in_the_stepping_branch_of_accumulation(lint):
    check(
        lint,
        """
        def train(model, loader, opt, accum):
            for i, (x, y) in enumerate(loader):
                (model(x, y) / accum).backward()
                if (i + 1) % accum == 0:
                    opt.zero_grad()  # expect: TL002
                    opt.step()
        """,
        CODE,
    )


def test_lightning_manual_optimization_clear_after_manual_backward(lint):
    check(
        lint,
        """
        import lightning as L
        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.automatic_optimization = False
            def training_step(self, batch, batch_idx):
                opt = self.optimizers()
                loss = self.compute_loss(batch)
                self.manual_backward(loss)
                opt.zero_grad()  # expect: TL002
                opt.step()
        """,
        CODE,
    )


# ----- hard negatives -------------------------------------------------------------------------------


def test_detectron2_clear_between_forward_and_backward(lint):
    check(
        lint,
        """
        class AMPTrainer:
            def run_step(self):
                data = next(self._data_loader_iter)
                with torch.autocast("cuda"):
                    losses = sum(self.model(data).values())
                self.optimizer.zero_grad()
                self.grad_scaler.scale(losses).backward()
                self.grad_scaler.step(self.optimizer)
                self.grad_scaler.update()
        """,
        CODE,
    )


def test_nanogpt_clear_after_scaler_update(lint):
    check(
        lint,
        """
        while True:
            for micro_step in range(gradient_accumulation_steps):
                with ctx:
                    logits, loss = model(X, Y)
                    loss = loss / gradient_accumulation_steps
                scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
        """,
        CODE,
    )


def test_skip_nonfinite_batch_clears_and_continues(lint):
    check(
        lint,
        """
        import torch
        def train(model, loader, optimizer):
            for x, y in loader:
                loss = model(x, y)
                loss.backward()
                if not torch.isfinite(loss):
                    optimizer.zero_grad()
                    continue
                optimizer.step()
                optimizer.zero_grad()
        """,
        CODE,
    )


def test_gan_clears_generator_after_discriminator_backward(lint):
    check(
        lint,
        """
        import torch
        optD = torch.optim.Adam(netD.parameters())
        optG = torch.optim.Adam(netG.parameters())
        for real in loader:
            netD.zero_grad()
            lossD = netD(real).mean() - netD(netG(z).detach()).mean()
            lossD.backward()
            netG.zero_grad()
            optD.step()
            lossG = -netD(netG(z)).mean()
            lossG.backward()
            optG.step()
        """,
        CODE,
    )


def test_lbfgs_closure_clears_before_its_backward(lint):
    check(
        lint,
        """
        import torch
        optimizer = torch.optim.LBFGS(model.parameters())
        for step in range(20):
            loss = criterion(model(x), y)
            loss.backward()
            def closure():
                optimizer.zero_grad()
                out = criterion(model(x), y)
                out.backward()
                return out
            optimizer.step(closure)
        """,
        CODE,
    )


def test_clear_between_two_backwards_before_one_step(lint):
    # The first backward only measures input gradients; its parameter grads are dropped on purpose.
    check(
        lint,
        """
        def adversarial_step(model, x, y, opt, eps):
            x.requires_grad_(True)
            model(x).sub(y).pow(2).mean().backward()
            x_adv = (x + eps * x.grad.sign()).detach()
            opt.zero_grad()
            model(x_adv).sub(y).pow(2).mean().backward()
            opt.step()
        """,
        CODE,
    )


def test_frozen_parameters_grads_dropped_before_step(lint):
    check(
        lint,
        """
        def train(model, loader, opt):
            for x, y in loader:
                opt.zero_grad()
                model(x, y).backward()
                for p in model.backbone.parameters():
                    p.grad = None
                opt.step()
        """,
        CODE,
    )


def test_timm_clear_after_update_with_continue(lint):
    check(
        lint,
        """
        def train_one_epoch(model, loader, optimizer, accum_steps):
            for idx, (inp, tgt) in enumerate(loader):
                need_update = (idx + 1) % accum_steps == 0
                loss = model(inp, tgt) / accum_steps
                loss.backward()
                if need_update:
                    optimizer.step()
                if not need_update:
                    continue
                optimizer.zero_grad()
        """,
        CODE,
    )


# ----- skipped update: a branch that clears, steps and leaves the iteration -----------------------


def test_overflow_branch_clears_steps_and_leaves_before_the_normal_step(lint):
    # The branch drops the gradients on purpose: the step with no gradients only keeps the scaler's
    # bookkeeping, and `continue` / `return` pass over the real update below.
    check(
        lint,
        """
        import torch
        def fit(model, batches, opt, scaler, max_norm):
            for batch in batches:
                opt.zero_grad(set_to_none=True)
                with torch.autocast("cuda"):
                    loss = model(batch)
                scaler.scale(loss).backward()
                scaler.unscale_(opt)
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
                if norm > 10 * max_norm:
                    print("norm too large, dropping this update")
                    opt.zero_grad(set_to_none=True)
                    scaler.step(opt)
                    scaler.update()
                    continue
                scaler.step(opt)
                scaler.update()

        class Updater:
            def update(self, loss):
                self.optim.zero_grad()
                loss.backward()
                if self.grad_norm() > self.limit:
                    self.optim.zero_grad()
                    self.optim.step()
                    return False
                self.optim.step()
                return True
        """,
        CODE,
    )


def test_overflow_branch_that_falls_through_to_the_normal_step_is_reported(lint):
    # No jump after the branch's step: the normal step runs next with the gradients already cleared.
    findings = check(
        lint,
        """
        import torch
        def fit(model, batches, opt, scaler, max_norm):
            for batch in batches:
                opt.zero_grad()
                loss = model(batch)
                scaler.scale(loss).backward()
                scaler.unscale_(opt)
                if torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm) > max_norm:
                    opt.zero_grad()  # expect: TL002
                    scaler.step(opt)
                    scaler.update()
                scaler.step(opt)
                scaler.update()
        """,
        CODE,
    )
    assert "`scaler.scale(loss).backward()` (line 7)" in findings[0].message
    assert "`scaler.step(opt)` (line 11)" in findings[0].message


def test_clear_on_the_normal_path_beside_a_skip_branch_is_reported(lint):
    # The skip branch leaves, but the normal path clears between the backward and its own step.
    findings = check(
        lint,
        """
        def fit(model, batches, opt, limit):
            for batch in batches:
                loss = model(batch)
                loss.backward()
                if loss.item() > limit:
                    opt.zero_grad()
                    opt.step()
                    continue
                opt.zero_grad()  # expect: TL002
                opt.step()
        """,
        CODE,
    )
    assert "`loss.backward()` (line 5)" in findings[0].message and "`opt.step()` (line 11)" in findings[0].message


def test_branch_that_clears_steps_and_leaves_without_a_normal_step_is_reported(lint):
    # Nothing else steps this optimizer: the branch's step is the update, and it applies nothing.
    check(
        lint,
        """
        def fit(model, batches, opt, every):
            for i, batch in enumerate(batches):
                model(batch).backward()
                if i % every == 0:
                    opt.zero_grad()  # expect: TL002
                    opt.step()
                    continue
        """,
        CODE,
    )


def test_break_out_of_an_inner_loop_still_reaches_the_step_after_it(lint):
    # `break` leaves only the inner loop: the step after it runs with the cleared gradients.
    check(
        lint,
        """
        def fit(model, batches, opt, tries):
            for batch in batches:
                model(batch).backward()
                for attempt in range(tries):
                    opt.zero_grad()  # expect: TL002
                    opt.step()
                    break
                opt.step()
        """,
        CODE,
    )


# ----- miss: the trainer's own `self.zero_grad()` wrapper -------------------------------------------


def test_own_zero_grad_wrapper_called_between_backward_and_step(lint):
    findings = check(
        lint,
        """
        class Learner:
            def zero_grad(self):
                self.opt.zero_grad()

            def step(self):
                self.opt.step()

            def one_batch(self, xb, yb):
                loss = self.loss_func(self.model(xb), yb)
                loss.backward()
                self.zero_grad()  # expect: TL002
                self.step()

            def fit(self, epochs):
                for epoch in range(epochs):
                    for xb, yb in self.dl:
                        self.one_batch(xb, yb)
        """,
        CODE,
    )
    assert "(which runs `self.opt.zero_grad()` at line 4)" in findings[0].message


def test_own_zero_grad_wrapper_called_after_the_step(lint):
    check(
        lint,
        """
        class Learner:
            def zero_grad(self):
                self.opt.zero_grad()

            def step(self):
                self.opt.step()

            def one_batch(self, xb, yb):
                self.zero_grad()
                loss = self.loss_func(self.model(xb), yb)
                loss.backward()
                self.step()

            def fit(self, epochs):
                for epoch in range(epochs):
                    for xb, yb in self.dl:
                        self.one_batch(xb, yb)
        """,
        CODE,
    )


# ----- a backward helper bound with functools.partial ------------------------------------------


def test_partial_bound_backward_then_clear_is_reported(lint):
    findings = check(
        lint,
        """
        import functools
        import torch

        def backward_pass(half_precision, objective):
            if half_precision:
                objective.half().backward()
            else:
                objective.backward()

        def fit(model, loader, half_precision):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
            run_backward = functools.partial(backward_pass, half_precision)
            for x, y in loader:
                total = (model(x) - y).pow(2).mean()
                run_backward(total)
                optimizer.zero_grad()  # expect: TL002
                optimizer.step()
        """,
        CODE,
    )
    assert findings[0].message.startswith("`optimizer.zero_grad()` runs after `objective.backward()` (line 9)")


def test_partial_bound_backward_in_gan_alternation_is_fine(lint):
    # The helper only runs the backward: each network's backward sits between its own clear
    # and its own step (the generator's loss is named so that no "loss" spelling gives it away).
    check(
        lint,
        """
        from functools import partial
        import torch

        def backward_pass(half_precision, objective, optimizer, index):
            if half_precision:
                with amp.scale_loss(objective, optimizer, index) as scaled:
                    scaled.backward()
            else:
                objective.backward()

        class GanTrainer:
            def __init__(self, gen, disc, half_precision):
                self.gen, self.disc, self.half_precision = gen, disc, half_precision
                self.gen_opt = torch.optim.Adam(gen.parameters())
                self.disc_opt = torch.optim.Adam(disc.parameters())

            def train_step(self, real, z):
                backward = partial(backward_pass, self.half_precision)
                self.disc_opt.zero_grad()
                loss = self.disc(self.gen(z).detach()).mean() - self.disc(real).mean()
                backward(loss, self.disc_opt, 0)
                self.disc_opt.step()

                self.gen_opt.zero_grad()
                adversarial = -self.disc(self.gen(z)).mean()
                backward(adversarial, self.gen_opt, 1)
                self.gen_opt.step()
        """,
        CODE,
    )


# ----- a skip branch inside a helper of another file -----------------------------------------

# The epoch function lives in its own module; the script calls it once per epoch. Its only clear
# after the backward sits on the branch that drops a bad batch (`zero_grad(); continue`).
EPOCH_HELPER = """
    import torch

    def run_epoch(net, batches, criterion, opt, log):
        net.train()
        total = 0.0
        for inputs, targets in batches:
            loss = criterion(net(inputs), targets)
            loss.backward()
            bad = not torch.isfinite(loss)
            for p in net.parameters():
                if p.grad is not None and not torch.isfinite(p.grad).all():
                    bad = True
            if bad:
                log("dropping this batch")
                opt.zero_grad()
                continue
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            opt.zero_grad()
            total += loss.item()
        return total
"""

EPOCH_SCRIPT = """
    import torch
    from engine.loops import run_epoch

    def main(net, batches, epochs):
        opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
        criterion = torch.nn.CrossEntropyLoss()
        for epoch in range(epochs):
            train_loss = run_epoch(net, batches, criterion, opt, print)
            print(epoch, train_loss)
"""


def test_skip_branch_clear_in_a_helper_of_another_file_is_fine(tmp_path):
    files = {"engine/__init__.py": "", "engine/loops.py": EPOCH_HELPER, "train.py": EPOCH_SCRIPT}
    assert lint_in_project(tmp_path, files, "train.py", CODE) == []


def test_normal_path_clear_in_a_helper_of_another_file_is_reported(tmp_path):
    # The same helper with the clear moved onto the normal path, before the step: every step applies nothing.
    helper = EPOCH_HELPER.replace(
        "            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)\n            opt.step()\n",
        "            opt.zero_grad()\n            opt.step()\n",
    )
    assert helper != EPOCH_HELPER
    files = {"engine/__init__.py": "", "engine/loops.py": helper, "train.py": EPOCH_SCRIPT}
    findings = lint_in_project(tmp_path, files, "train.py", CODE)
    assert [f.line for f in findings] == [9]
    assert findings[0].message.splitlines()[0] == (
        "`run_epoch(net, batches, criterion, opt, print)` clears the gradients after its own backward and before "
        "its own `opt` step"
    )
