"""TL001 missing-zero-grad: an optimizer steps every iteration but its gradients are never cleared."""

from expect_markers import check

CODE = "TL001"


# ----- positives ------------------------------------------------------------------------------


def test_clearing_once_before_the_loop(lint):
    findings = check(
        lint,
        """
        import torch
        def fit(model, loader, loss_fn, epochs):
            opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
            opt.zero_grad(set_to_none=True)
            for epoch in range(epochs):
                for inputs, labels in loader:
                    loss = loss_fn(model(inputs), labels)
                    loss.backward()
                    opt.step()  # expect: TL001
        """,
        CODE,
    )
    message = findings[0].message
    assert findings[0].name == "missing-zero-grad" and findings[0].severity == "error"
    assert "`opt.step()`" in message and "opt.zero_grad()" in message
    assert "once before the loop is not enough" in message


def test_clearing_only_in_the_amp_branch(lint):
    check(
        lint,
        """
        import torch
        def train_epoch(model, loader, optimizer, scaler, use_amp):
            for images, targets in loader:
                if use_amp:
                    optimizer.zero_grad()
                    with torch.autocast("cuda", dtype=torch.float16):
                        loss = model(images, targets)
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
                    scaler.update()
                else:
                    loss = model(images, targets)
                    loss.backward()
                    optimizer.step()  # expect: TL001
        """,
        CODE,
    )


def test_gan_generator_optimizer_never_cleared(lint):
    # Each optimizer is judged on its own: clearing the discriminator does not clear the generator.
    check(
        lint,
        """
        import torch
        from torch import nn, optim
        class Critic(nn.Module):
            pass
        class Generator(nn.Module):
            pass
        critic, gen = Critic(), Generator()
        opt_c = optim.RMSprop(critic.parameters(), lr=5e-5)
        opt_g = optim.RMSprop(gen.parameters(), lr=5e-5)
        for real, _ in loader:
            fake = gen(torch.randn(real.size(0), 100))
            critic.zero_grad()
            loss_c = critic(fake.detach()).mean() - critic(real).mean()
            loss_c.backward()
            opt_c.step()
            loss_g = -critic(fake).mean()
            loss_g.backward()
            opt_g.step()  # expect: TL001
        """,
        CODE,
    )


def test_step_inside_helper_called_from_loop_without_clearing(lint):
    findings = check(
        lint,
        """
        def apply_update(loss, optimizer):
            loss.backward()
            optimizer.step()  # expect: TL001
        def train(model, loader, optimizer, criterion):
            model.train()
            for batch in loader:
                apply_update(criterion(model(batch["x"]), batch["y"]), optimizer)
        """,
        CODE,
    )
    assert "loop at line 7" in findings[0].message


def test_per_iteration_method_without_clearing(lint):
    # A train_step the framework calls once per batch: nothing here or elsewhere clears.
    check(
        lint,
        """
        import torch
        class Trainer:
            def __init__(self, model):
                self.model = model
                self.optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            def train_step(self, batch):
                out = self.model(batch["image"])
                loss = torch.nn.functional.cross_entropy(out, batch["label"])
                loss.backward()
                self.optimizer.step()  # expect: TL001
                return loss.detach()
        """,
        CODE,
    )


def test_clearing_only_on_first_iteration(lint):
    check(
        lint,
        """
        import torch
        def run(net, data, opt, scaler):
            for it, (x, y) in enumerate(data):
                if it == 0:
                    opt.zero_grad()
                scaler.scale(net(x, y)).backward()
                scaler.step(opt)  # expect: TL001
                scaler.update()
        """,
        CODE,
    )


def test_clearing_once_per_epoch_is_not_per_batch(lint):
    check(
        lint,
        """
        def train(model, loader, optimizer, epochs):
            for epoch in range(epochs):
                optimizer.zero_grad()
                for x, y in loader:
                    model(x).sub(y).square().mean().backward()
                    optimizer.step()  # expect: TL001
        """,
        CODE,
    )


def test_clearing_the_other_optimizer_in_a_two_optimizer_class(lint):
    check(
        lint,
        """
        import torch
        class GANTrainer:
            def __init__(self, netG, netD):
                self.netG, self.netD = netG, netD
                self.opt_d = torch.optim.Adam(netD.parameters(), lr=2e-4)
                self.opt_g = torch.optim.Adam(netG.parameters(), lr=2e-4)
            def fit(self, loader):
                for real in loader:
                    self.opt_d.zero_grad()
                    d_loss = self.netD(real).mean() - self.netD(self.netG(real).detach()).mean()
                    d_loss.backward()
                    self.opt_d.step()
                    g_loss = -self.netD(self.netG(real)).mean()
                    g_loss.backward()
                    self.opt_g.step()  # expect: TL001
        """,
        CODE,
    )


# ----- hard negatives -------------------------------------------------------------------------------


def test_nanogpt_shape_micro_steps_and_clear_after_update(lint):
    check(
        lint,
        """
        import torch
        from contextlib import nullcontext
        ctx = nullcontext()
        scaler = torch.cuda.amp.GradScaler(enabled=True)
        optimizer = model.configure_optimizers(0.1, 6e-4, (0.9, 0.95), "cuda")
        X, Y = get_batch("train")
        iter_num = 0
        while True:
            for micro_step in range(gradient_accumulation_steps):
                with ctx:
                    logits, loss = model(X, Y)
                    loss = loss / gradient_accumulation_steps
                X, Y = get_batch("train")
                scaler.scale(loss).backward()
            if grad_clip != 0.0:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            iter_num += 1
            if iter_num > max_iters:
                break
        """,
        CODE,
    )


def test_mnist_shape(lint):
    check(
        lint,
        """
        import torch
        import torch.nn.functional as F
        def train(args, model, device, train_loader, optimizer, epoch):
            model.train()
            for batch_idx, (data, target) in enumerate(train_loader):
                data, target = data.to(device), target.to(device)
                optimizer.zero_grad()
                output = model(data)
                loss = F.nll_loss(output, target)
                loss.backward()
                optimizer.step()
        def test(model, device, test_loader):
            model.eval()
            with torch.no_grad():
                for data, target in test_loader:
                    output = model(data.to(device))
        """,
        CODE,
    )


def test_accelerate_accumulate_loop(lint):
    check(
        lint,
        """
        from accelerate import Accelerator
        accelerator = Accelerator(gradient_accumulation_steps=4)
        model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)
        for batch in loader:
            with accelerator.accumulate(model):
                outputs = model(**batch)
                accelerator.backward(outputs.loss)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
        """,
        CODE,
    )


def test_timm_shape_closures_continue_and_clear_after_update(lint):
    check(
        lint,
        """
        def train_one_epoch(model, loader, optimizer, loss_fn, accum_steps, loss_scaler=None):
            optimizer.zero_grad()
            last_idx = len(loader) - 1
            for idx, (inp, tgt) in enumerate(loader):
                need_update = idx == last_idx or (idx + 1) % accum_steps == 0
                def _forward():
                    out = model(inp)
                    _loss = loss_fn(out, tgt)
                    if accum_steps > 1:
                        _loss /= accum_steps
                    return _loss
                def _backward(_loss):
                    if loss_scaler is not None:
                        loss_scaler(_loss, optimizer, need_update=need_update)
                    else:
                        _loss.backward()
                        if need_update:
                            optimizer.step()
                loss = _forward()
                _backward(loss)
                if not need_update:
                    continue
                optimizer.zero_grad()
        """,
        CODE,
    )


def test_mae_loss_scaler_hides_backward_and_step(lint):
    check(
        lint,
        """
        def train_one_epoch(model, data_loader, optimizer, loss_scaler, accum_iter):
            optimizer.zero_grad()
            for data_iter_step, (samples, _) in enumerate(data_loader):
                loss, _, _ = model(samples, mask_ratio=0.75)
                loss /= accum_iter
                loss_scaler(loss, optimizer, parameters=model.parameters(),
                            update_grad=(data_iter_step + 1) % accum_iter == 0)
                if (data_iter_step + 1) % accum_iter == 0:
                    optimizer.zero_grad()
        """,
        CODE,
    )


def test_detectron2_run_step_with_both_clear_positions(lint):
    check(
        lint,
        """
        class SimpleTrainer:
            def __init__(self, model, data_loader, optimizer, zero_grad_before_forward=False):
                self.model, self.optimizer = model, optimizer
                self._data_loader_iter = iter(data_loader)
                self.zero_grad_before_forward = zero_grad_before_forward
            def run_step(self):
                data = next(self._data_loader_iter)
                if self.zero_grad_before_forward:
                    self.optimizer.zero_grad()
                loss_dict = self.model(data)
                losses = sum(loss_dict.values())
                if not self.zero_grad_before_forward:
                    self.optimizer.zero_grad()
                losses.backward()
                self.optimizer.step()
        """,
        CODE,
    )


def test_lbfgs_closure_clears(lint):
    check(
        lint,
        """
        import torch
        optimizer = torch.optim.LBFGS(model.parameters(), lr=0.8)
        for i in range(steps):
            def closure():
                optimizer.zero_grad()
                loss = criterion(model(inputs), targets)
                loss.backward()
                return loss
            optimizer.step(closure)
        """,
        CODE,
    )


def test_manual_sgd_with_model_zero_grad(lint):
    check(
        lint,
        """
        import torch
        for epoch in range(100):
            for x, y in batches:
                model.zero_grad()
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
                with torch.no_grad():
                    for p in model.parameters():
                        p.data.add_(p.grad, alpha=-0.01)
        """,
        CODE,
    )


def test_kfold_sweep_with_a_whole_training_run_per_fold(lint):
    check(
        lint,
        """
        import torch
        for fold, (train_idx, val_idx) in enumerate(kfold.split(dataset)):
            model = Net()
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
            for epoch in range(epochs):
                for x, y in make_loader(train_idx):
                    optimizer.zero_grad()
                    criterion(model(x), y).backward()
                    optimizer.step()
        """,
        CODE,
    )


def test_dcgan_clears_each_model_before_its_backward(lint):
    check(
        lint,
        """
        import torch.optim as optim
        optimizerD = optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
        optimizerG = optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
        for epoch in range(niter):
            for i, data in enumerate(dataloader, 0):
                netD.zero_grad()
                errD_real = criterion(netD(data[0]), real_label)
                errD_real.backward()
                fake = netG(noise)
                errD_fake = criterion(netD(fake.detach()), fake_label)
                errD_fake.backward()
                optimizerD.step()
                netG.zero_grad()
                errG = criterion(netD(fake), real_label)
                errG.backward()
                optimizerG.step()
        """,
        CODE,
    )


def test_set_grad_to_none_over_parameters_at_end_of_iteration(lint):
    check(
        lint,
        """
        def train(model, loader, opt):
            for x, y in loader:
                (model(x) - y).abs().mean().backward()
                opt.step()
                for param in model.parameters():
                    param.grad = None
        """,
        CODE,
    )


def test_clear_in_helper_and_clear_at_accumulation_window_start(lint):
    check(
        lint,
        """
        def reset(optimizer):
            optimizer.zero_grad(set_to_none=True)
        def train(model, loader, optimizer, accum):
            for i, (x, y) in enumerate(loader):
                if i % accum == 0:
                    reset(optimizer)
                (model(x, y) / accum).backward()
                if (i + 1) % accum == 0:
                    optimizer.step()
        """,
        CODE,
    )


def test_backward_and_step_utility_fed_the_callers_loss(lint):
    # timm's NativeScaler: the caller owns the iteration and clears.
    check(
        lint,
        """
        import torch
        class NativeScaler:
            def __init__(self):
                self._scaler = torch.amp.GradScaler()
            def __call__(self, loss, optimizer, clip_grad=None, parameters=None):
                self._scaler.scale(loss).backward()
                self._scaler.step(optimizer)
                self._scaler.update()
        """,
        CODE,
    )


def test_distributed_optimizer_step_with_context_id(lint):
    check(
        lint,
        """
        import torch.distributed.autograd as dist_autograd
        from torch.distributed.optim import DistributedOptimizer
        for epoch in range(10):
            for x, y in batches:
                with dist_autograd.context() as context_id:
                    loss = criterion(model(x), y)
                    dist_autograd.backward(context_id, [loss])
                    opt.step(context_id)
        """,
        CODE,
    )


def test_lightning_manual_optimization_and_closure_helper(lint):
    check(
        lint,
        """
        import lightning as L
        class GAN(L.LightningModule):
            def training_step(self, batch, batch_idx):
                opt_g, opt_d = self.optimizers()
                def run(opt, loss):
                    opt.zero_grad()
                    self.manual_backward(loss)
                run(opt_g, self.generator_loss(batch))
                opt_g.step()
                run(opt_d, self.discriminator_loss(batch))
                opt_d.step()
        """,
        CODE,
    )


def test_single_step_in_a_test_function(lint):
    check(
        lint,
        """
        import torch
        def test_scheduler_warmup():
            p = torch.nn.Parameter(torch.zeros(3))
            opt = torch.optim.SGD([p], lr=1.0)
            p.sum().backward()
            opt.step()
            assert opt.param_groups[0]["lr"] == 1.0
        class DistOptimizerTest:
            def _test_optim_base(self, optim_cls):
                local_optim = optim_cls([w], lr=0.05)
                loss = module(x).sum()
                loss.backward()
                local_optim.step()
        """,
        CODE,
    )


def test_lightning_manual_gan_clears_only_one_optimizer(lint):
    # Each optimizer on its own: opt_d's clear does not reach opt_g's parameters.
    findings = check(
        lint,
        """
        import lightning as L
        class GAN(L.LightningModule):
            def training_step(self, batch, batch_idx):
                opt_g, opt_d = self.optimizers()
                self.manual_backward(self.generator_loss(batch))
                opt_g.step()  # expect: TL001
                opt_d.zero_grad()
                self.manual_backward(self.discriminator_loss(batch))
                opt_d.step()
        """,
        CODE,
    )
    assert "in `training_step()`" in findings[0].message and "opt_g.zero_grad()" in findings[0].message


def test_lightning_manual_gan_clears_the_other_wrapped_optimizer(lint):
    # `opt_d.optimizer` is the torch optimizer inside opt_d's LightningOptimizer: it clears opt_d,
    # not opt_g.
    findings = check(
        lint,
        """
        import lightning as L
        class GAN(L.LightningModule):
            def training_step(self, batch, batch_idx):
                opt_g, opt_d = self.optimizers()
                opt_d.optimizer.zero_grad()
                self.manual_backward(self.generator_loss(batch) + self.discriminator_loss(batch))
                opt_g.step()  # expect: TL001
                opt_d.step()
        """,
        CODE,
    )
    assert "`opt_g.step()`" in findings[0].message and "opt_g.zero_grad()" in findings[0].message


def test_lightning_clears_through_the_wrapped_optimizers(lint):
    # LightningOptimizer hands out the torch optimizer it wraps as `.optimizer`: clearing that
    # clears what the wrapper's step applies (here the base module lives in another package).
    check(
        lint,
        """
        from mylib.models.base import ProjectModule
        class Debiased(ProjectModule):
            def training_step(self, batch, batch_idx):
                opts = self.optimizers()
                main_opt, adv_opt = opts[0], opts[1]
                out = self.forward(batch)
                main_opt.optimizer.zero_grad()
                adv_opt.optimizer.zero_grad()
                self.manual_backward(out["loss"])
                main_opt.step()
                adv_opt.step()
                adv_opt.optimizer.zero_grad()
                self.manual_backward(out["adv_loss"])
                adv_opt.step()
        """,
        CODE,
    )


def test_optimizers_known_to_share_parameters_clear_each_other(lint):
    check(
        lint,
        """
        import torch
        def train(model, loader):
            opt_body = torch.optim.SGD(model.parameters(), lr=0.1)
            opt_swa = torch.optim.SGD(model.parameters(), lr=0.01)
            for x in loader:
                opt_body.zero_grad()
                model(x).mean().backward()
                opt_body.step()
                model(x).mean().backward()
                opt_swa.step()
        """,
        CODE,
    )


def test_step_with_a_closure_defined_elsewhere(lint):
    check(
        lint,
        """
        def run(optimizer, closure_fn, model, iters):
            for _ in range(iters):
                loss = model()
                loss.backward()
                optimizer.step(closure_fn)
        """,
        CODE,
    )


def test_lightning_optimizers_over_one_layer_clear_each_other(lint):
    # The shape of a Lightning manual-optimization test: both optimizers hold `self.layer`.
    check(
        lint,
        """
        import torch
        import lightning as L
        class Model(L.LightningModule):
            def training_step(self, batch, batch_idx):
                opt_a, opt_b = self.optimizers()
                self.manual_backward(self.loss(self(batch)))
                opt_a.step()
                self.manual_backward(self.loss(self(batch)))
                opt_b.step()
                opt_b.zero_grad()
            def configure_optimizers(self):
                first = torch.optim.SGD(self.layer.parameters(), lr=0.1)
                second = torch.optim.Adam(self.layer.parameters(), lr=0.001)
                return [first, second]
        """,
        CODE,
    )


def test_accelerate_clear_and_step_at_window_end(lint):
    check(
        lint,
        """
        for batch in loader:
            with accelerator.accumulate(model):
                accelerator.backward(model(**batch).loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), 1.0)
                    optimizer.zero_grad()
                optimizer.step()
        """,
        CODE,
    )


def test_xla_optimizer_step_without_clearing(lint):
    check(
        lint,
        """
        import torch_xla.core.xla_model as xm
        def train_loop_fn(loader, model, optimizer, loss_fn):
            model.train()
            for data, target in loader:
                loss = loss_fn(model(data), target)
                loss.backward()
                xm.optimizer_step(optimizer)  # expect: TL001
        """,
        CODE,
    )


def test_clears_in_nested_branches_merge(lint):
    # Both branches of `if t:` clear inside `if x:`, and `if x:` alone clears too; the `else`
    # of `if x:` clears as well: every path that steps has cleared.
    check(
        lint,
        """
        def train(model, loader, opt, x, t):
            for batch in loader:
                if x:
                    if t:
                        opt.zero_grad()
                    else:
                        opt.zero_grad()
                    opt.zero_grad()
                else:
                    opt.zero_grad()
                model(batch).backward()
                opt.step()
        """,
        CODE,
    )


# ----- message: clear once per optimizer step where the loop accumulates on purpose -------------


def test_accumulating_loop_is_told_to_clear_once_per_optimizer_step(lint):
    findings = check(
        lint,
        """
        def train(model, loader, optimizer, criterion, accum_steps):
            for i, (x, y) in enumerate(loader):
                loss = criterion(model(x), y) / accum_steps
                loss.backward()
                if (i + 1) % accum_steps == 0:
                    optimizer.step()  # expect: TL001
        """,
        "TL001",
    )
    message = findings[0].message
    assert "once per optimizer step, right after `optimizer.step()`" in message
    assert "`(i + 1) % accum_steps == 0`" in message and "once per iteration" not in message


def test_micro_step_loop_is_told_to_clear_once_per_optimizer_step(lint):
    findings = check(
        lint,
        """
        def train(model, get_batch, optimizer, grad_accum, max_iters):
            for it in range(max_iters):
                for micro_step in range(grad_accum):
                    logits, loss = model(*get_batch())
                    (loss / grad_accum).backward()
                optimizer.step()  # expect: TL001
        """,
        "TL001",
    )
    assert "micro-step loop at line 4" in findings[0].message
    assert "once per optimizer step" in findings[0].message


def test_loop_without_accumulation_keeps_the_per_iteration_advice(lint):
    findings = check(
        lint,
        """
        def train(model, loader, optimizer, criterion):
            for x, y in loader:
                criterion(model(x), y).backward()
                optimizer.step()  # expect: TL001
        """,
        "TL001",
    )
    assert findings[0].message.endswith("call `optimizer.zero_grad()` once per iteration")


# Each iteration builds a fresh module and an optimizer over its parameters: gradients start empty
# and no optimizer state is lost, whatever the loop iterates (a unit test's cases, a product of
# settings). A model that outlives the iteration, or a wrapper of one, still carries gradients over.
# The markers are the findings of the variant that builds the module once, before the loop.
_CASES_TEST = """
    import itertools
    import unittest
    from copy import deepcopy

    import torch
    from onmt.modules import CopyGenerator


    class TestCopyGenerator(unittest.TestCase):
        def test_trainable_params_update(self):
            for params, init_case in itertools.product(self.PARAMS, self.INIT_CASES):
                cgen = CopyGenerator(**init_case)
                trainable = {n: p for n, p in cgen.named_parameters() if p.requires_grad}
                old = deepcopy(trainable)
                cgen(*self.dummy_inputs(params, init_case)).sum().backward()
                dummy_optim = torch.optim.SGD(trainable.values(), 1, momentum=0.9)  # expect: TL004
                dummy_optim.step()  # expect: TL001
                for name in old:
                    self.assertTrue(trainable[name].ne(old[name]).any())
    """


def test_an_iteration_that_builds_its_own_model_and_optimizer_is_a_run_of_its_own(lint):
    assert lint(_CASES_TEST, "TL001") == [] and lint(_CASES_TEST, "TL004") == []
    # Parameter groups and a filter over the fresh module's parameters: the same.
    groups = _CASES_TEST.replace(
        "torch.optim.SGD(trainable.values(), 1, momentum=0.9)",
        'torch.optim.SGD([{"params": filter(lambda p: p.requires_grad, cgen.parameters())}], 1, momentum=0.9)',
    )
    assert lint(groups, "TL001") == [] and lint(groups, "TL004") == []


def test_an_optimizer_rebuilt_over_a_model_that_outlives_the_iteration_is_reported(lint):
    outer = _CASES_TEST.replace(
        "            for params, init_case in itertools.product(self.PARAMS, self.INIT_CASES):\n"
        "                cgen = CopyGenerator(**init_case)\n",
        "            cgen = CopyGenerator(**self.INIT_CASES[0])\n"
        "            for params, init_case in itertools.product(self.PARAMS, self.INIT_CASES):\n"
        "                pass\n",
    )
    findings = check(lint, outer, "TL001")
    assert "never cleared in the loop at line" in findings[0].message
    check(lint, outer, "TL004")
    # A wrapper built each iteration around that model shares its parameters (and their .grad).
    wrapped = outer.replace(
        "trainable = {n: p for n, p in cgen.named_parameters() if p.requires_grad}",
        "trainable = {n: p for n, p in torch.nn.DataParallel(cgen).named_parameters()}",
    )
    check(lint, wrapped, "TL001")


# ----- a clear and a step under the same condition ----------------------------------------------
# A clear and a step guarded by the same test on names not rebound between the two tests run on
# the same iterations, however the test is spelled (`x is not None` / the `else` of `x is None`,
# `a != b` / the `else` of `a == b`). The textbook `train_ch3` clears through the optimizer when it
# has one and by hand otherwise.
_SAME_CONDITION = """
    def sgd(params, lr, batch_size):
        for param in params:
            param.data -= lr * param.grad / batch_size

    def train_ch3(net, train_iter, loss, num_epochs, batch_size, params=None, lr=None, optimizer=None):
        for epoch in range(num_epochs):
            for X, y in train_iter:
                l = loss(net(X), y).sum()
                if optimizer is not None:
                    optimizer.zero_grad()
                elif params is not None and params[0].grad is not None:
                    for param in params:
                        param.grad.data.zero_()
                l.backward()
                if optimizer is None:
                    sgd(params, lr, batch_size)
                else:
                    optimizer.step()
    """


def test_a_clear_and_a_step_under_the_same_condition_spelled_differently(lint):
    assert lint(_SAME_CONDITION, "TL001") == []
    # The step in the `if` branch of the positive test, the clear in the `else` of its negation.
    flipped = _SAME_CONDITION.replace(
        "if optimizer is not None:\n", "if optimizer is None:\n                    pass\n                else:\n"
    ).replace("elif params is not None and", "if params is not None and")
    assert lint(flipped, "TL001") == []
    compared = """
        def train(model, loader, optimizer, mode):
            for x, y in loader:
                if mode != "manual":
                    optimizer.zero_grad()
                model(x, y).backward()
                if mode == "manual":
                    continue
                else:
                    optimizer.step()
        """
    assert lint(compared, "TL001") == []


def test_a_clear_under_another_condition_than_the_step_is_reported(lint):
    other = _SAME_CONDITION.replace("if optimizer is None:\n", "if params is not None:\n").replace(
        "                    optimizer.step()\n", "                    optimizer.step()  # expect: TL001\n"
    )
    check(lint, other, CODE)
    # The same text, but the name is rebound between the clear's test and the step's test.
    rebound = """
        def train(model, loader, optimizer, schedule):
            use_opt = None
            for i, (x, y) in enumerate(loader):
                if use_opt is not None:
                    optimizer.zero_grad()
                model(x, y).backward()
                use_opt = schedule(i)
                if use_opt is not None:
                    optimizer.step()  # expect: TL001
        """
    check(lint, rebound, CODE)


# ----- a step closure made by a factory, called through a variable -------------------------------
# `train_step = make_train_step(model, optimizer)` ... `train_step(batch)`: the call runs the def the
# factory returns, so its backward and step belong to the caller's iteration, which may clear them.
_FACTORY_CLOSURE = """
    import torch

    def make_train_step(model, optimizer, loss_fn, clip=None):
        params = tuple(model.parameters()) if clip is not None else ()

        def train_step(batch):
            # zero_grad stays outside: the compiled closure would break its graph on it
            loss = loss_fn(model(batch["x"]), batch["y"])
            loss.backward()
            if clip is not None:
                torch.nn.utils.clip_grad_norm_(params, clip)
            optimizer.step()
            return loss.detach()

        return train_step

    def train_one_epoch(model, optimizer, loss_fn, loader, compiled=False):
        train_step = None
        if compiled:
            train_step = torch.compile(make_train_step(model, optimizer, loss_fn))
        else:
            train_step = make_train_step(model, optimizer, loss_fn, clip=1.0)
        for batch in loader:
            optimizer.zero_grad()
            loss = train_step(batch)
            print(float(loss))
    """


def test_a_step_closure_called_after_the_callers_clear_is_covered(lint):
    assert lint(_FACTORY_CLOSURE, CODE) == []


def test_a_step_closure_called_in_a_loop_that_never_clears_is_reported(lint):
    never = _FACTORY_CLOSURE.replace("            optimizer.zero_grad()\n", "").replace(
        "            optimizer.step()\n", "            optimizer.step()  # expect: TL001\n"
    )
    findings = check(lint, never, CODE)
    assert "in the loop at line 24" in findings[0].message


# ----- one step on parameters the function builds --------------------------------------------


def test_one_step_on_a_model_built_by_the_function_is_silent(lint):
    """A checkpoint test's helper builds a model and an optimizer, steps once to give the optimizer
    state, and returns both: each call starts from parameters with no gradient."""
    check(
        lint,
        """
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from myproject.optim import build_optimizer

        def make_model_and_optimizer(cfg):
            model = DDP(torch.nn.Linear(8, 8).to(dist.get_rank()))
            optim = build_optimizer(cfg, model)
            model(torch.rand(2, 8)).pow(2).mean().backward()
            optim.step()
            return model, optim

        def check_round_trip(cfg, path):
            model, optim = make_model_and_optimizer(cfg)
            save_checkpoint(path, model, optim)
            model2, optim2 = make_model_and_optimizer(cfg)
            load_checkpoint(path, model2, optim2)
            for a, b in zip(optim.state.values(), optim2.state.values()):
                assert torch.equal(a["exp_avg"], b["exp_avg"])
        """,
        CODE,
    )


def test_one_step_on_a_fresh_model_wrapped_by_a_library_call_is_silent(lint):
    """peft's weight-decay test (heldout23): a fresh `SimpleNet()` handed to `get_peft_model`, whose
    result holds the net's parameters and the adapter's new ones; one step per call, no loop."""
    check(
        lint,
        """
        import torch
        from peft import get_peft_model
        from peft.optimizers import create_lorafa_optimizer

        class SimpleNet(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.embedding = torch.nn.Embedding(100, 20)
                self.lin0 = torch.nn.Linear(20, 16)

            def forward(self, x):
                return self.lin0(self.embedding(x))

        def run_weight_decay_step(config, lr, weight_decay):
            model = get_peft_model(SimpleNet(), config).to("cpu")
            optimizer = create_lorafa_optimizer(model=model, r=config.r, lr=lr, weight_decay=weight_decay)
            x = torch.randint(100, (2, 4, 10))
            torch.nn.functional.cross_entropy(model(x), torch.randint(16, (2, 4))).backward()
            optimizer.step()
            return dict(model.named_parameters())
        """,
        CODE,
    )


def test_one_step_on_a_wrapped_model_handed_in_is_reported(lint):
    """The same wrapper around the caller's model: its gradients outlive each call."""
    check(
        lint,
        """
        import torch
        from peft import get_peft_model

        def run_step(base, config, batch):
            model = get_peft_model(base, config)
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
            model(batch).sum().backward()
            optimizer.step()  # expect: TL001
            return model

        net = SimpleNet()
        for batch in loader:
            run_step(net, config, batch)
        """,
        CODE,
    )


def test_one_step_per_call_on_a_model_handed_in_is_reported(lint):
    """The same single step on the caller's model: every call adds to the gradients of the last."""
    (finding,) = check(
        lint,
        """
        import torch

        def make_optimizer(model):
            return torch.optim.Adam(model.parameters(), lr=1e-3)

        def take_step(model, optim, batch):
            model(batch).pow(2).mean().backward()
            optim.step()  # expect: TL001

        model = torch.nn.Linear(8, 8)
        optim = make_optimizer(model)
        for batch in loader:
            take_step(model, optim, batch)
        """,
        CODE,
    )
    assert "`optim.step()` applies gradients that are never cleared" in finding.message


def test_steps_in_a_loop_on_a_model_built_by_the_function_are_reported(lint):
    check(
        lint,
        """
        import torch

        def fit(data):
            net = torch.nn.Linear(8, 1)
            optim = torch.optim.SGD(net.parameters(), lr=0.1)
            for x, y in data:
                torch.nn.functional.mse_loss(net(x), y).backward()
                optim.step()  # expect: TL001
            return net
        """,
        CODE,
    )


def test_one_step_on_a_new_head_over_a_handed_in_encoder_is_reported(lint):
    """The head is new on every call, but the encoder inside it is the caller's: its gradients
    pile up from call to call."""
    check(
        lint,
        """
        import torch

        class Classifier(torch.nn.Module):
            def __init__(self, encoder):
                super().__init__()
                self.encoder = encoder
                self.fc = torch.nn.Linear(64, 2)

            def forward(self, x):
                return self.fc(self.encoder(x))

        def probe_once(encoder, x, y):
            model = Classifier(encoder)
            optim = torch.optim.SGD(model.parameters(), lr=0.01)
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optim.step()  # expect: TL001

        for x, y in loader:
            probe_once(encoder, x, y)
        """,
        CODE,
    )


def test_retry_loop_left_right_after_the_step_is_cleared_once_per_step(lint):
    """The `while True` retries skipped micro-batches but every path after the step leaves it
    (a flag set true, then `if done: break`): the clear before the loop is once per step."""
    check(
        lint,
        """
        import math
        def train_step(batches, model, optimizer, accum):
            optimizer.zero_grad()
            seen = 0
            while True:
                done = False
                loss = model(next(batches)) / accum
                if math.isfinite(loss.item()):
                    loss.backward()
                    seen += 1
                    if seen == accum:
                        optimizer.step()
                        done = True
                    if done:
                        break
                else:
                    print("skipping a non-finite loss")
            return loss.item()
        """,
        CODE,
    )


def test_retry_loop_that_can_step_again_is_reported(lint):
    """The step is not followed by a way out on every path: a second pass steps again without a
    clear in between."""
    findings = check(
        lint,
        """
        import math
        def train_step(batches, model, optimizer, accum):
            optimizer.zero_grad()
            seen = 0
            while True:
                done = False
                loss = model(next(batches)) / accum
                if math.isfinite(loss.item()):
                    loss.backward()
                    seen += 1
                    optimizer.step()  # expect: TL001
                    if seen == accum:
                        done = True
                    if done:
                        break
            return loss.item()
        """,
        CODE,
    )
    assert "clearing once before the loop is not enough" in findings[0].message


# ----- a clear behind a flag parameter of the training function ----------------------------------

_FLAGGED_CLEAR = """
    import unittest

    import torch
    from torch import nn


    class AccumulationCase(unittest.TestCase):
        def setUp(self):
            self.net = nn.Linear(6, 2)
            self.loader = [(torch.randn(4, 6), torch.randint(0, 2, (4,))) for _ in range(3)]

        def run_steps(self, opt=None, clear_grads=DEFAULT):
            for x, y in self.loader:
                if opt and clear_grads:
                    opt.zero_grad()
                nn.functional.cross_entropy(self.net(x), y).backward()
                if opt:
                    opt.step()  # expect: TL001

        def check_steps(self):
            opt = torch.optim.SGD(self.net.parameters(), lr=0.1)
            CALLS
"""


def _flagged(default: str, calls: str) -> str:
    return _FLAGGED_CLEAR.replace("DEFAULT", default).replace("CALLS", calls)


def test_clear_behind_a_flag_every_running_call_keeps_is_not_reported(lint):
    for calls in (
        "self.run_steps(opt)",
        "self.run_steps(opt, clear_grads=True)",
        # the call turning it off is one the test expects to raise: it computes nothing
        "self.run_steps(opt)\n            with self.assertRaises(RuntimeError):\n"
        "                self.run_steps(opt, clear_grads=False)",
    ):
        assert lint(_flagged("True", calls).replace("  # expect: TL001", ""), CODE) == [], calls


def test_clear_behind_a_flag_with_no_call_shown_follows_its_default(lint):
    assert lint(_flagged("True", "pass").replace("  # expect: TL001", ""), CODE) == []
    findings = check(lint, _flagged("False", "pass"), CODE)
    assert "`opt.step()` applies gradients that are never cleared in the loop at line 14" in findings[0].message


def test_clear_behind_a_flag_a_running_call_turns_off_is_reported(lint):
    for default, calls in (
        ("True", "self.run_steps(opt, clear_grads=False)"),
        ("True", "self.run_steps(opt)\n            self.run_steps(opt, False)"),
        ("False", "self.run_steps(opt)"),
    ):
        findings = check(lint, _flagged(default, calls), CODE)
        assert "`opt.step()` applies gradients that are never cleared" in findings[0].message, calls


# ----- a clear under the same condition as every backward ---------------------------------------


def test_clear_and_backward_both_skipped_on_a_bad_loss_is_not_reported(lint):
    # The skipped iterations run no backward: every backward follows a clear, so no batch's gradient
    # is added to an earlier one (the step on a skipped batch reapplies the last gradient: not TL001).
    source = """
        import math
        import torch

        class Runner:
            def __init__(self, model, optimizer, scaler, loader):
                self.model, self.optimizer, self.scaler = model, optimizer, scaler
                self._batches = iter(loader)

            def run_step(self):
                batch = next(self._batches)
                with torch.autocast("cuda"):
                    loss = self.model(batch)
                if math.isfinite(loss.item()):
                    self.optimizer.zero_grad(set_to_none=True)
                    self.scaler.scale(loss).backward()
                else:
                    print("non-finite loss, batch skipped")
                self.scaler.step(self.optimizer)
                self.scaler.update()

        def fit(model, optimizer, loader, epochs):
            for epoch in range(epochs):
                for images, labels in loader:
                    loss = torch.nn.functional.cross_entropy(model(images), labels)
                    if not torch.isfinite(loss):
                        print(f"epoch {epoch}: skipped a non-finite loss")
                    else:
                        optimizer.zero_grad()
                        loss.backward()
                    optimizer.step()
        """
    assert lint(source, CODE) == []


def test_clear_guarded_while_a_backward_runs_on_both_paths_is_reported(lint):
    findings = check(
        lint,
        """
        import torch

        def fit(model, optimizer, loader):
            for images, labels in loader:
                loss = torch.nn.functional.cross_entropy(model(images), labels)
                if torch.isfinite(loss):
                    optimizer.zero_grad()
                loss.backward()
                optimizer.step()  # expect: TL001
        """,
        CODE,
    )
    assert "`optimizer.step()` applies gradients that are never cleared in the loop at line 5" in findings[0].message


def test_clear_gates_one_backward_of_two_is_reported(lint):
    # The auxiliary backward runs on every iteration, also those that skip the clear: it adds to the
    # gradients of the batch before.
    check(
        lint,
        """
        import torch

        def fit(model, head, optimizer, loader, warmup):
            for step, (images, labels) in enumerate(loader):
                features = model(images)
                if step >= warmup:
                    optimizer.zero_grad()
                    torch.nn.functional.cross_entropy(head(features), labels).backward(retain_graph=True)
                features.pow(2).mean().backward()
                optimizer.step()  # expect: TL001
        """,
        CODE,
    )


# ----- a helper method that clears in the way its caller names --------------------------------

_RESET_BY_MODE = """
    import torch

    class ResetModes:
        def reset_grads(self, nets, opt, style):
            if style == "drop":
                for net in nets:
                    for p in net.parameters():
                        p.grad = None
            elif style == "module":
                for net in nets:
                    net.zero_grad()
            elif style == "optim":
                opt.zero_grad()

        def run(self, batches):
            for style in STYLES:
                net = torch.nn.Linear(4, 1)
                opt = torch.optim.SGD(net.parameters(), lr=0.1)
                for x in batches:
                    self.reset_grads([net], opt, style)
                    net(x).sum().backward()
                    opt.step()MARK
"""


def test_helper_branches_on_a_mode_every_passed_value_names_is_silent(lint):
    # Every style the loop passes takes a branch that clears; the `elif` chain has no `else`.
    source = _RESET_BY_MODE.replace("STYLES", '("drop", "module", "optim")').replace("MARK", "")
    assert lint(source, CODE) == []


def test_helper_branches_on_a_mode_one_passed_value_skips_is_reported(lint):
    # "keep" takes no branch: its iterations step on gradients the previous ones left.
    source = _RESET_BY_MODE.replace("STYLES", '["drop", "module", "keep"]').replace("MARK", "  # expect: TL001")
    findings = check(lint, source, CODE)
    assert findings[0].line == 23
    assert "`opt.step()` applies gradients that are never cleared in the loop at line 20" in findings[0].message


def test_helper_branches_on_a_mode_the_caller_does_not_show_is_reported(lint):
    # A style from outside the file could be anything, also none of the three.
    source = _RESET_BY_MODE.replace("def run(self, batches):", "def run(self, batches, styles):")
    source = source.replace("STYLES", "styles").replace("MARK", "  # expect: TL001")
    check(lint, source, CODE)


def test_helper_modes_from_a_module_constant_tuple_are_followed(lint):
    source = _RESET_BY_MODE.replace("STYLES", "ALL_STYLES").replace("MARK", "")
    assert lint('ALL_STYLES = ("drop", "module", "optim")\n' + source.replace("\n    ", "\n"), CODE) == []


# ----- a benchmark whose loss and model nothing reads --------------------------------------------
def test_speed_benchmark_of_a_discarded_layer_is_silent(lint):
    check(
        lint,
        """
        import time
        import torch

        class SparseAttention(torch.nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.heads = cfg.heads
                self.proj = torch.nn.Linear(cfg.width, cfg.width * 3)

        def time_attention(cfg, seq_len, repeats=100):
            layer = SparseAttention(cfg).to(cfg.device)
            opt = torch.optim.Adam(layer.parameters(), lr=1e-4)
            opt.zero_grad()
            x = torch.ones(8, seq_len, cfg.width, device=cfg.device)
            target = torch.zeros(8, seq_len, cfg.width, device=cfg.device)
            layer(x)  # warm-up
            start = time.perf_counter()
            for _ in range(repeats):
                out = layer(x)
                loss = torch.nn.functional.mse_loss(out, target)
                loss.backward()
                opt.step()
            print(f"{(time.perf_counter() - start) / repeats:.4f} s per step")
        """,
        "TL001",
    )


def test_toy_training_that_prints_or_keeps_its_result_is_reported(lint):
    findings = check(
        lint,
        """
        import torch

        class SparseAttention(torch.nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.proj = torch.nn.Linear(cfg.width, cfg.width)

        class Classifier(torch.nn.Module):
            def __init__(self, encoder, cfg):
                super().__init__()
                self.encoder = encoder
                self.head = torch.nn.Linear(cfg.width, cfg.classes)

        def fit_toy(steps=500):
            x = torch.randn(64, 1000)
            y = torch.randn(64, 10)
            net = torch.nn.Sequential(torch.nn.Linear(1000, 100), torch.nn.ReLU(), torch.nn.Linear(100, 10))
            opt = torch.optim.SGD(net.parameters(), lr=1e-4)
            for t in range(steps):
                loss = (net(x) - y).pow(2).sum()
                if t % 100 == 99:
                    print(t, loss.item())
                loss.backward()
                opt.step()  # expect: TL001

        def fit_and_keep(cfg, steps=500):
            x = torch.ones(4, cfg.width)
            layer = SparseAttention(cfg)
            opt = torch.optim.Adam(layer.parameters(), lr=1e-4)
            for _ in range(steps):
                layer(x).sum().backward()
                opt.step()  # expect: TL001
            return layer

        def fit_on_data(cfg, loader):
            layer = SparseAttention(cfg)
            opt = torch.optim.Adam(layer.parameters(), lr=1e-4)
            for x, y in loader:
                torch.nn.functional.mse_loss(layer(x), y).backward()
                opt.step()  # expect: TL001

        def fit_shared(encoder, cfg, steps=500):
            x = torch.ones(4, cfg.width)
            head = Classifier(encoder, cfg)
            opt = torch.optim.Adam(head.parameters(), lr=1e-4)
            for _ in range(steps):
                head(x).sum().backward()
                opt.step()  # expect: TL001
        """,
        "TL001",
    )
    assert "`opt.step()` applies gradients that are never cleared" in findings[0].message


# ----- an optimizer over a free tensor, driven only to trace its learning-rate schedule ---------
def test_optimizer_driven_over_a_free_tensor_to_plot_its_schedule_is_silent(lint):
    check(
        lint,
        """
        import matplotlib.pyplot as plt
        import torch
        from schedules import CosineWithWarmup

        def plot_schedule(total=200):
            dummy = torch.nn.Parameter(torch.zeros(1))
            opt = torch.optim.AdamW([dummy], lr=3e-4)
            sched = CosineWithWarmup(opt, warmup=20, total=total)
            rates = []
            for _ in range(total):
                dummy.sum().backward()
                opt.step()
                rates.append(opt.param_groups[0]["lr"])
                sched.step()
            plt.plot(rates)
        """,
        "TL001",
    )


def test_free_tensor_fitted_to_data_or_read_afterwards_is_reported(lint):
    findings = check(
        lint,
        """
        import torch

        def fit_line(x, y, steps=300):
            w = torch.nn.Parameter(torch.zeros(3))
            opt = torch.optim.SGD([w], lr=0.05)
            for _ in range(steps):
                loss = ((x @ w - y) ** 2).mean()
                loss.backward()
                opt.step()  # expect: TL001
            return w

        def minimise_quadratic(steps=300):
            v = torch.nn.Parameter(torch.ones(4))
            opt = torch.optim.SGD([v], lr=0.05)
            for _ in range(steps):
                (v**2).sum().backward()
                opt.step()  # expect: TL001
            print(v)

        def trace_rate_and_grad(steps=300):
            g = torch.nn.Parameter(torch.ones(4))
            opt = torch.optim.SGD([g], lr=0.05)
            for _ in range(steps):
                g.sum().backward()
                opt.step()  # expect: TL001
                print(opt.param_groups[0]["lr"], opt.param_groups[0]["params"][0].grad)
        """,
        "TL001",
    )
    assert "`opt.step()` applies gradients that are never cleared in the loop at line 7" in findings[0].message


# ----- a closure handed to the step in any argument, or inside a literal given to it -----------


def test_closure_in_an_options_dict_clears_but_the_other_branch_does_not(lint):
    # The line-search optimizer re-runs the closure (and the backward) inside the step; the
    # closure clears first. The plain branch never clears: only its step is reported.
    findings = check(
        lint,
        """
        import torch
        from linesearch import FullBatchLineSearch
        def refine(latent, render, target, iters, line_search):
            if line_search:
                opt = FullBatchLineSearch([latent], lr=1.0)
            else:
                opt = torch.optim.Adam([latent], lr=1e-2)
            loss = None
            for _ in range(iters):
                if line_search:
                    def objective():
                        opt.zero_grad()
                        return (render(latent) - target).abs().mean()
                    options = {"closure": objective, "current_loss": loss, "max_ls": 5}
                    loss, grad, lr = opt.step(options=options)
                else:
                    loss = (render(latent) - target).abs().mean()
                    loss.backward()
                    opt.step()  # expect: TL001
        """,
        CODE,
    )
    assert findings[0].message.startswith("`opt.step()` applies gradients that are never cleared in the loop")


def test_closures_in_any_argument_or_literal_that_clear(lint):
    # A later clear-after-step in one branch needs the closure's own clear to cover the other.
    check(
        lint,
        """
        import torch
        from linesearch import LineSearch
        def fit(model, batches, opt, mode):
            for x, y in batches:
                if mode == "dict":
                    def loss_at():
                        opt.zero_grad()
                        loss = torch.nn.functional.mse_loss(model(x), y)
                        loss.backward()
                        return loss
                    opt.step({"closure": loss_at, "max_ls": 4})
                elif mode == "keyword":
                    def evaluate():
                        opt.zero_grad()
                        loss = torch.nn.functional.mse_loss(model(x), y)
                        loss.backward()
                        return loss
                    opt.step(loss_fn=evaluate)
                elif mode == "list":
                    opt.step([lambda: opt.zero_grad() or torch.nn.functional.mse_loss(model(x), y).backward()])
                else:
                    loss = torch.nn.functional.mse_loss(model(x), y)
                    loss.backward()
                    opt.step()
                    opt.zero_grad()
        """,
        CODE,
    )


def test_closure_in_an_options_dict_that_does_not_clear(lint):
    findings = check(
        lint,
        """
        import torch
        def fit(model, batches, opt):
            for x, y in batches:
                def evaluate():
                    loss = torch.nn.functional.mse_loss(model(x), y)
                    loss.backward()
                    return loss
                settings = {"closure": evaluate, "max_ls": 10}
                opt.step(options=settings)  # expect: TL001
        """,
        CODE,
    )
    assert "`opt.step(options=settings)` applies gradients that are never cleared" in findings[0].message


def test_closure_in_an_options_dict_clears_another_optimizer(lint):
    check(
        lint,
        """
        import torch
        def train(gen, disc, loader, epochs):
            opt_g = torch.optim.SGD(gen.parameters(), lr=0.1)
            opt_d = torch.optim.SGD(disc.parameters(), lr=0.1)
            for _ in range(epochs):
                for real in loader:
                    def generator_loss():
                        opt_d.zero_grad()
                        loss = -disc(gen(real)).mean()
                        loss.backward()
                        return loss
                    opt_g.step(options={"closure": generator_loss})  # expect: TL001
                    opt_d.zero_grad()
                    d_loss = disc(gen(real).detach()).mean() - disc(real).mean()
                    d_loss.backward()
                    opt_d.step()
        """,
        CODE,
    )


def test_options_rebound_on_another_branch_show_no_closure(lint):
    # Without `warm` the step gets no closure and nothing clears the loop's own backward; which
    # dict reaches the step is not one literal, so the closure is not taken as run.
    check(
        lint,
        """
        import torch
        def fit(model, batches, opt, warm):
            def evaluate():
                opt.zero_grad()
                return model(batches[0]).sum()
            for x in batches:
                model(x).sum().backward()
                options = {"max_ls": 2}
                if warm:
                    options = {"closure": evaluate}
                opt.step(options=options)  # expect: TL001
        """,
        CODE,
    )


# ----- gradients written into .grad replace what it held ----------------------------------------


def test_gradients_copied_into_grad_replace_it(lint):
    # The gradients are computed on a worker copy and written into the parameters: an assignment,
    # not an accumulation, so nothing piles up between steps.
    check(
        lint,
        """
        import torch
        def apply_worker_gradients(net, worker, batches, loss_fn):
            optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
            for x, y in batches:
                worker.zero_grad()
                loss_fn(worker(x), y).backward()
                grads = [p.grad.cpu().numpy() for p in worker.parameters()]
                for grad, param in zip(grads, net.parameters()):
                    param.grad = torch.from_numpy(grad)
                optimizer.step()
        """,
        CODE,
    )


def test_gradient_rescaled_from_itself_still_accumulates(lint):
    findings = check(
        lint,
        """
        def train(model, loader, optimizer, criterion):
            for x, y in loader:
                criterion(model(x), y).backward()
                for p in model.parameters():
                    p.grad = p.grad * 0.5
                optimizer.step()  # expect: TL001
        """,
        CODE,
    )
    assert "optimizer" in findings[0].message


# ----- a clear at the start of a window that a counter reset by the step reopens -----------------

_WINDOW_COUNTER = """
    def train(model, loader, optimizer, criterion, window, epochs):
        for epoch in range(epochs):
            START
            for inputs, targets in loader:
                if GUARD:
                    optimizer.zero_grad()
                loss = criterion(model(inputs), targets) / window
                loss.backward()
                pending += 1
                if pending == window:
                    optimizer.step()  # expect: TL001
                    RESET
                else:
                    continue
                print(epoch, loss.item())
"""


def _window(start: str = "pending = 0", guard: str = "pending == 0", reset: str = "pending = 0") -> str:
    return _WINDOW_COUNTER.replace("START", start).replace("GUARD", guard).replace("RESET", reset)


def test_clear_when_a_counter_the_step_resets_is_back_at_its_start_is_silent(lint):
    """Whatever the counter is called: the step's branch sets it back to a value passing the clear's
    test, so does the start of every pass over the loader, and nothing else changes it on the way
    round: every window opens with a clear."""
    for guard in ("pending == 0", "not pending", "pending < 1"):
        assert lint(_window(guard=guard).replace("  # expect: TL001", ""), CODE) == [], guard


def test_clear_behind_a_counter_reset_to_a_value_failing_its_test_is_reported(lint):
    for source in (
        _window(reset="pending = 1"),  # reset, but to a value the clear's test rejects
        _window(reset="print('stepped')"),  # never reset after the step: the clear cannot recur
        _window(start="pending = 1"),  # each pass over the loader opens with the clear skipped
        _window(guard="pending == 0 and epoch == 0"),  # a second variable the reset does not decide
    ):
        findings = check(lint, source, CODE)
        assert "`optimizer.step()` applies gradients that are never cleared in the loop at line 5" in (
            findings[0].message
        ), source


def test_clear_behind_a_flag_the_step_raises_again_is_silent(lint):
    check(
        lint,
        """
        def fit(model, batches, opt, loss_fn, token_budget):
            needs_clear = True
            seen_tokens = 0
            for x, y in batches:
                if needs_clear:
                    opt.zero_grad(set_to_none=True)
                    needs_clear = False
                loss_fn(model(x), y).backward()
                seen_tokens += x.numel()
                if seen_tokens >= token_budget:
                    opt.step()
                    needs_clear = True
                    seen_tokens = 0
        """,
        CODE,
    )


def test_clear_behind_a_flag_a_later_line_lowers_again_is_reported(lint):
    """The step raises the flag, but a line after it in the same iteration lowers it before the
    next test: the clear never runs after the first step."""
    findings = check(
        lint,
        """
        def fit(model, batches, opt, loss_fn, token_budget):
            needs_clear = True
            seen_tokens = 0
            for x, y in batches:
                if needs_clear:
                    opt.zero_grad(set_to_none=True)
                loss_fn(model(x), y).backward()
                seen_tokens += x.numel()
                if seen_tokens >= token_budget:
                    opt.step()  # expect: TL001
                    needs_clear = True
                    seen_tokens = 0
                needs_clear = False
        """,
        CODE,
    )
    assert "`opt.step()` applies gradients that are never cleared in the loop at line 5" in findings[0].message


# ----- a model handed in as a parameter, stepped by an optimizer of the script ------------------

NOTEBOOK_STYLE = """
    import torch
    from torch.optim import AdamW

    def initialize_model(epochs=4):
        classifier = torch.nn.Sequential(torch.nn.Linear(768, 50), torch.nn.ReLU(), torch.nn.Linear(50, 2))
        optimizer = AdamW(classifier.parameters(), lr=5e-5, eps=1e-8)
        return classifier, optimizer

    def train(model, train_dataloader, epochs=4):
        for epoch_i in range(epochs):
            model.train()
            for step, (inputs, labels) in enumerate(train_dataloader):
                model.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(inputs), labels)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()

    classifier, optimizer = initialize_model(epochs=2)
    {call}
"""


def test_clearing_the_model_the_callers_hand_in_clears_the_global_optimizer(lint):
    # `model` is the optimizer's own `classifier`: `model.zero_grad()` clears what the step applies.
    assert lint(NOTEBOOK_STYLE.format(call="train(classifier, loader, epochs=2)"), CODE) == []


def test_clearing_another_model_handed_in_is_reported(lint):
    findings = check(
        lint,
        NOTEBOOK_STYLE.replace(
            "                optimizer.step()", "                optimizer.step()  # expect: TL001"
        ).format(call="probe = torch.nn.Linear(768, 2)\n    train(probe, loader, epochs=2)"),
        CODE,
    )
    assert findings[0].message.startswith("`optimizer.step()` applies gradients that are never cleared")


def test_an_uncalled_function_clearing_its_parameter_may_clear_a_global_optimizer(lint):
    # No call tells which model `model` holds; the optimizer's model is the script's own, not a
    # name of `train`: the parameter cannot be told apart from it (a GAN's two parameters can).
    assert lint(NOTEBOOK_STYLE.format(call="print(classifier)"), CODE) == []
