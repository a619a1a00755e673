"""TL004 optimizer-in-loop: positives and hard negatives shaped like real training scripts."""

from expect_markers import check


# ----- positives ---------------------------------------------------------------------------------
def test_adam_rebuilt_every_epoch_over_a_persistent_model(lint):
    findings = check(
        lint,
        """
        import torch.optim as optim

        model = Net().to(device)
        for epoch in range(1, args.epochs + 1):
            optimizer = optim.Adam(model.parameters(), lr=args.lr)  # expect: TL004
            model.train()
            for batch_idx, (data, target) in enumerate(train_loader):
                optimizer.zero_grad()
                loss = F.nll_loss(model(data), target)
                loss.backward()
                optimizer.step()
        """,
        "TL004",
    )
    message = findings[0].message
    assert "`optim.Adam(...)`" in message and "line 5" in message
    assert "momentum" in message and "build the optimizer once, before the loop" in message
    assert findings[0].severity == "error" and findings[0].name == "optimizer-in-loop"


def test_optimizer_built_per_batch(lint):
    check(
        lint,
        """
        import torch

        for x, y in loader:
            opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)  # expect: TL004
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
        """,
        "TL004",
    )


def test_optimizer_built_in_train_epoch_helper_of_a_trainer_class(lint):
    findings = check(
        lint,
        """
        import torch

        class Trainer:
            def __init__(self, model, loader):
                self.model = model
                self.loader = loader

            def train_epoch(self, lr):
                self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr)  # expect: TL004
                for batch in self.loader:
                    loss = self.model(**batch).loss
                    loss.backward()
                    self.optimizer.step()
                    self.optimizer.zero_grad()

            def fit(self, epochs):
                for epoch in range(epochs):
                    self.train_epoch(lr=1e-4 * 0.9 ** epoch)
        """,
        "TL004",
    )
    assert "through the call at line 19" in findings[0].message


def test_third_party_optimizer_in_a_while_step_loop(lint):
    check(
        lint,
        """
        import bitsandbytes as bnb

        step = 0
        while step < max_steps:
            optimizer = bnb.optim.AdamW8bit(model.parameters(), lr=3e-4)  # expect: TL004
            x, y = next(batches)
            optimizer.zero_grad(set_to_none=True)
            model(x, y).loss.backward()
            optimizer.step()
            step += 1
        """,
        "TL004",
    )


def test_optimizer_factory_called_per_epoch_in_neutral_loop(lint):
    findings = check(
        lint,
        """
        import torch

        def make_optimizer(model, lr):
            opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
            return opt

        def train_one_epoch(model, opt, loader):
            for x, y in loader:
                opt.zero_grad()
                torch.nn.functional.cross_entropy(model(x), y).backward()
                opt.step()

        model = build()
        for i in range(90):
            opt = make_optimizer(model, 0.1 * (0.1 ** (i // 30)))  # expect: TL004
            train_one_epoch(model, opt, loader)
        """,
        "TL004",
    )
    assert "`make_optimizer(...)`" in findings[0].message


def test_helper_building_the_optimizer_from_its_argument_for_one_outer_model(lint):
    """The helper builds Adam over the parameters it is given, and every call gives it the same model:
    one run, restarted optimizer state each time."""
    findings = check(
        lint,
        """
        import torch

        def fit_some_more(net, batches, lr):
            opt = torch.optim.Adam(net.parameters(), lr=lr)  # expect: TL004
            for x, y in batches:
                opt.zero_grad()
                torch.nn.functional.mse_loss(net(x), y).backward()
                opt.step()

        regressor = Regressor(hidden=64)
        for i in range(40):
            fit_some_more(regressor, make_batches(i), lr=3e-4)
        """,
        "TL004",
    )
    assert "loop at line 12 (`for i in range(40)`), through the call at line 13" in findings[0].message


def test_models_handed_out_inside_a_continuing_loop_are_still_reported(lint):
    """A loop over models counts as a sweep only when each iteration trains its model through a loop of
    steps: one step per model, repeated by an outer loop, rebuilds each model's optimizer every time;
    and a loop over models inside the epoch loop continues the epoch's run."""
    check(
        lint,
        """
        import torch

        for i in range(num_updates):
            x, y = next(stream)
            for net in heads:
                opt = torch.optim.Adam(net.parameters(), lr=1e-3)  # expect: TL004
                opt.zero_grad()
                torch.nn.functional.mse_loss(net(x), y).backward()
                opt.step()
        """,
        "TL004",
    )
    check(
        lint,
        """
        import torch

        def one_epoch(net, loader):
            opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)  # expect: TL004
            for x, y in loader:
                opt.zero_grad()
                torch.nn.functional.cross_entropy(net(x), y).backward()
                opt.step()

        for epoch in range(20):
            for net in students:
                one_epoch(net, train_loader)
        """,
        "TL004",
    )


# ----- hard negatives ------------------------------------------------------------------------------
def test_loop_handing_out_each_model_of_an_ensemble_to_a_training_helper_is_silent(lint):
    """Each iteration trains a different network with an optimizer over that network's parameters,
    whether the optimizer is built by a helper the loop calls or in the loop's own body."""
    assert not lint(
        """
        import torch

        def fit(member, data, steps=2000):
            inputs, targets = data
            opt = torch.optim.Adam(params=member.parameters(), lr=1e-3)
            for _ in range(steps):
                opt.zero_grad()
                torch.nn.functional.mse_loss(member(inputs), targets).backward()
                opt.step()
            return member

        committee = [Regressor(hidden=32) for _ in range(8)]
        for member in committee:
            fit(member, (x_train, y_train))

        for net in [Regressor(hidden=16), Regressor(hidden=64)]:
            opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
            for x, y in loader:
                opt.zero_grad()
                torch.nn.functional.mse_loss(net(x), y).backward()
                opt.step()
        """,
        "TL004",
    )


def test_kfold_cross_validation_with_fresh_model_per_fold_is_silent(lint):
    assert not lint(
        """
        import torch
        from sklearn.model_selection import StratifiedKFold

        def training_function(model, optimizer, train_dl, epochs):
            for epoch in range(epochs):
                model.train()
                for batch in train_dl:
                    loss = model(**batch).loss
                    accelerator.backward(loss)
                    optimizer.step()
                    optimizer.zero_grad()

        folds = StratifiedKFold(n_splits=3)
        for i, (train_idxs, valid_idxs) in enumerate(folds.split(X, y)):
            model = create_model()
            optimizer = torch.optim.AdamW(params=model.parameters(), lr=2e-5)
            training_function(model, optimizer, loaders[i], epochs=3)
        """,
        "TL004",
    )


def test_neutral_outer_loop_rebuilding_model_and_optimizer_is_silent(lint):
    assert not lint(
        """
        import copy
        import torch

        init_state = copy.deepcopy(model.state_dict())
        for width in (64, 128, 256):
            model.load_state_dict(init_state)
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)
            for x, y in loader:
                opt.zero_grad()
                model(x).sub(y).pow(2).mean().backward()
                opt.step()
        """,
        "TL004",
    )


def test_inner_loop_optimizer_of_meta_learning_is_silent(lint):
    assert not lint(
        """
        import copy
        import torch

        meta_opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        for batch in task_loader:
            learner = copy.deepcopy(model)
            inner_opt = torch.optim.SGD(learner.parameters(), lr=0.4)
            for _ in range(5):
                inner_opt.zero_grad()
                loss_fn(learner(batch.support_x), batch.support_y).backward()
                inner_opt.step()
            meta_opt.zero_grad()
            loss_fn(model(batch.query_x), batch.query_y).backward()
            meta_opt.step()
        """,
        "TL004",
    )


def test_optimizer_switched_once_at_some_epoch_is_silent(lint):
    assert not lint(
        """
        import torch

        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        for epoch in range(100):
            if epoch == swa_start:
                optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
            for x, y in loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
        """,
        "TL004",
    )


def test_continual_learning_task_loop_and_optimizer_outside_epoch_loop_are_silent(lint):
    assert not lint(
        """
        import torch

        def train(model, loader, epochs):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
            scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, epochs)
            for epoch in range(epochs):
                for x, y in loader:
                    optimizer.zero_grad()
                    criterion(model(x), y).backward()
                    optimizer.step()
                scheduler.step()

        for task_id, loader in enumerate(task_loaders):
            train(model, loader, epochs=5)
        """,
        "TL004",
    )


def test_optimizer_built_in_loop_of_a_function_that_does_not_train_is_silent(lint):
    assert not lint(
        """
        import torch

        def optimizers_for(models):
            result = []
            for m in models:
                result.append(torch.optim.Adam(m.parameters()))
            return result

        opts = optimizers_for([generator, discriminator])
        for x in loader:
            for opt in opts:
                opt.zero_grad()
            gan_loss(generator, discriminator, x).backward()
            for opt in opts:
                opt.step()
        """,
        "TL004",
    )


def test_pytorch_examples_mnist_main_is_silent(lint):
    assert not lint(
        """
        import torch.optim as optim
        from torch.optim.lr_scheduler import StepLR

        def train(args, model, device, train_loader, optimizer, epoch):
            model.train()
            for batch_idx, (data, target) in enumerate(train_loader):
                optimizer.zero_grad()
                loss = F.nll_loss(model(data.to(device)), target.to(device))
                loss.backward()
                optimizer.step()

        def main(args, device, train_loader):
            model = Net().to(device)
            optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
            scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
            for epoch in range(1, args.epochs + 1):
                train(args, model, device, train_loader, optimizer, epoch)
                scheduler.step()
        """,
        "TL004",
    )


def test_per_example_optimizer_over_a_fresh_tensor_is_silent(lint):
    assert not lint(
        """
        import torch

        for x, y in loader:
            delta = torch.zeros_like(x, requires_grad=True)
            attack_opt = torch.optim.SGD([delta], lr=0.01)
            for _ in range(10):
                attack_opt.zero_grad()
                (-loss_fn(model(x + delta), y)).backward()
                attack_opt.step()
        """,
        "TL004",
    )


def test_setter_method_rebuilding_the_optimizer_every_epoch(lint):
    findings = check(
        lint,
        """
        import torch

        class Trainer:
            def configure(self, epoch):
                self.opt = torch.optim.SGD(self.net.parameters(), lr=0.1 * 0.5 ** (epoch // 5), momentum=0.9)  # expect: TL004

            def run_epoch(self):
                for x, y in self.loader:
                    self.opt.zero_grad()
                    self.loss_fn(self.net(x), y).backward()
                    self.opt.step()

            def fit(self):
                for epoch in range(self.epochs):
                    self.configure(epoch)
                    self.run_epoch()
        """,
        "TL004",
    )
    assert "through the call at line 16" in findings[0].message


def test_optimizer_built_in_a_conditional_expression_is_silent(lint):
    assert not lint(
        """
        import torch

        optimizer = None
        for epoch in range(epochs):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1) if epoch == 0 else optimizer
            scaler_opt = scaler_opt or torch.optim.Adam(head.parameters())
            for x, y in loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
        """,
        "TL004",
    )


# ----- miss: model and optimizer rebuilt per data shard inside the epoch loop (report both) -----

_SHARDS = """
    import torch
    import torch.nn as nn

    def train(args, num_shards):
        for epoch in range(args.epochs):
            for shard_id in range(num_shards):
                model = nn.Sequential(nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))  # expect: TL003
                optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)  # expect: TL004
                for x, y in load_shard(args.data, shard_id):
                    optimizer.zero_grad()
                    nn.functional.cross_entropy(model(x), y).backward()
                    optimizer.step()

    def train_per_epoch(args, loader):
        for epoch in range(args.epochs):
            model = nn.Sequential(nn.Linear(512, 10))  # expect: TL003
            optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)  # expect: TL004
            for x, y in loader:
                optimizer.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
    """


def test_shard_loop_inside_the_epoch_loop_reports_model_and_optimizer(lint):
    check(lint, _SHARDS, "TL003")
    findings = check(lint, _SHARDS, "TL004")
    assert "`for shard_id in range(num_shards)`" in findings[0].message


def test_shard_loop_over_whole_runs_or_meta_learning_copies_is_silent(lint):
    source = """
        import copy
        import torch
        import torch.nn as nn

        def ensemble(args, num_shards):
            # one model per shard, each trained to completion: an ensemble, not one run
            models = []
            for shard_id in range(num_shards):
                model = nn.Linear(512, 10)
                optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
                for epoch in range(args.epochs):
                    for x, y in load_shard(args.data, shard_id):
                        optimizer.zero_grad()
                        nn.functional.cross_entropy(model(x), y).backward()
                        optimizer.step()
                models.append(model)
            return models

        def reptile(model, tasks, meta_lr=0.1, epochs=10):
            for epoch in range(epochs):
                for task in tasks:
                    fast = copy.deepcopy(model)
                    inner = torch.optim.SGD(fast.parameters(), lr=0.02)
                    for x, y in task:
                        inner.zero_grad()
                        nn.functional.mse_loss(fast(x), y).backward()
                        inner.step()
                    with torch.no_grad():
                        for p, q in zip(model.parameters(), fast.parameters()):
                            p += meta_lr * (q - p)
        """
    assert lint(source, "TL003") == [] and lint(source, "TL004") == []


# ----- family: a loop over settings written out in the code is a loop of runs ----------------------


def test_loop_over_a_literal_list_of_devices_or_settings_is_silent(lint):
    assert (
        lint(
            """
            import time
            import torch
            from torch import nn, optim

            for device in ["cpu", "cuda"]:
                criterion = nn.NLLLoss()
                optimizer = optim.Adam(model.classifier.parameters(), lr=0.001)
                model.to(device)
                for ii, (inputs, labels) in enumerate(trainloader):
                    inputs, labels = inputs.to(device), labels.to(device)
                    start = time.time()
                    loss = criterion(model.forward(inputs), labels)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    if ii == 3:
                        break
                print(f"Device = {device}; Time per batch: {(time.time() - start) / 3:.3f} seconds")

            for lr, wd in [(0.1, 5e-4), (0.01, 0.0)]:
                opt = optim.SGD(model.parameters(), lr=lr, weight_decay=wd)
                for x, y in loader:
                    opt.zero_grad()
                    criterion(model(x), y).backward()
                    opt.step()
            """,
            "TL004",
        )
        == []
    )


def test_literal_phase_loop_inside_the_epoch_loop_continues_the_run(lint):
    check(
        lint,
        """
        import torch

        for epoch in range(num_epochs):
            for phase in ["train", "val"]:
                optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)  # expect: TL004
                model.train(phase == "train")
                for inputs, labels in dataloaders[phase]:
                    optimizer.zero_grad()
                    with torch.set_grad_enabled(phase == "train"):
                        loss = criterion(model(inputs), labels)
                        if phase == "train":
                            loss.backward()
                            optimizer.step()
        """,
        "TL004",
    )


# ----- optimizers that hold no state -------------------------------------------------------------
NO_OP_OPTIMIZER = """
import torch


class FrozenOptimizer(torch.optim.Optimizer):
    \"\"\"Stands in for the optimizer when a shared loop only measures.\"\"\"

    def __init__(self):
        self.param_groups = [{"lr": 0.0}]

    def step(self, closure=None):
        return None

    def zero_grad(self, set_to_none=True):
        pass


def run_epoch(model, loader, optimizer, train):
    total = 0.0
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        if train:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        total += loss.item()
    return total


def fit(model, train_loader, val_loader, epochs):
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for epoch in range(epochs):
        model.train()
        run_epoch(model, train_loader, optimizer, train=True)
        model.eval()
        with torch.no_grad():
            run_epoch(model, val_loader, FrozenOptimizer(), train=False)
"""


def test_a_stand_in_optimizer_without_parameters_built_per_epoch_is_silent(lint):
    check(lint, NO_OP_OPTIMIZER, "TL004")
    # Whatever its constructor, an optimizer whose step does nothing keeps nothing between steps.
    no_step = NO_OP_OPTIMIZER.replace("def __init__(self):", "def __init__(self, params=None):").replace(
        "FrozenOptimizer()", "FrozenOptimizer(model.parameters())"
    )
    check(lint, no_step, "TL004")


def test_a_project_optimizer_that_forwards_its_parameters_is_reported(lint):
    findings = check(
        lint,
        """
        import torch


        class ClippedSGD(torch.optim.Optimizer):
            def __init__(self, params, lr=0.1, max_norm=1.0):
                super().__init__(params, dict(lr=lr, max_norm=max_norm))

            @torch.no_grad()
            def step(self, closure=None):
                for group in self.param_groups:
                    torch.nn.utils.clip_grad_norm_(group["params"], group["max_norm"])
                    for p in group["params"]:
                        if p.grad is not None:
                            p.add_(p.grad, alpha=-group["lr"])


        def fit(model, loader, epochs):
            for epoch in range(epochs):
                optimizer = ClippedSGD(params=model.parameters(), lr=0.1 * 0.95**epoch)  # expect: TL004
                for x, y in loader:
                    optimizer.zero_grad()
                    torch.nn.functional.cross_entropy(model(x), y).backward()
                    optimizer.step()
        """,
        "TL004",
    )
    assert findings[0].message.startswith("`ClippedSGD(...)` builds a new optimizer in every iteration of")


def test_a_stand_in_replaced_by_a_real_optimizer_in_the_epoch_loop_is_reported(lint):
    source = NO_OP_OPTIMIZER.replace(
        "run_epoch(model, val_loader, FrozenOptimizer(), train=False)",
        "run_epoch(model, val_loader, FrozenOptimizer(), train=False)\n"
        "        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)  # expect: TL004",
    )
    findings = check(lint, source, "TL004")
    assert findings[0].message.startswith("`torch.optim.AdamW(...)` builds a new optimizer in every iteration of")


# ----- an optimizer over tensors the iteration itself creates ------------------------------------
def test_optimizer_over_an_input_tensor_made_again_in_each_step_is_not_reported(lint):
    check(
        lint,
        """
        import torch
        from torch.autograd import Variable

        def as_leaf(image):
            tensor = torch.from_numpy(image).float().unsqueeze(0)
            return Variable(tensor, requires_grad=True)

        for step in range(200):
            canvas = as_leaf(picture)
            optimizer = torch.optim.SGD([canvas], lr=0.5)
            optimizer.zero_grad()
            score = -net(canvas)[0, target]
            score.backward()
            optimizer.step()
            picture = to_image(canvas)
        """,
        "TL004",
    )


def test_optimizer_over_a_requires_grad_factory_in_the_epoch_loop_is_not_reported(lint):
    check(
        lint,
        """
        import torch

        for epoch in range(10):
            noise = torch.zeros(1, 3, 32, 32, requires_grad=True)
            opt = torch.optim.Adam([noise], lr=0.01)
            for _ in range(5):
                opt.zero_grad()
                (-loss_fn(model(x + noise), y)).backward()
                opt.step()
        """,
        "TL004",
    )


def test_optimizer_over_a_tensor_made_once_before_the_loop_is_still_reported(lint):
    findings = check(
        lint,
        """
        import torch

        delta = torch.zeros(1, 3, 32, 32, requires_grad=True)
        for step in range(200):
            opt = torch.optim.Adam([delta], lr=0.01)  # expect: TL004
            opt.zero_grad()
            (-loss_fn(model(x + delta), y)).backward()
            opt.step()
        """,
        "TL004",
    )
    assert (
        "`torch.optim.Adam(...)` builds a new optimizer in every iteration of the loop at line 5" in findings[0].message
    )


# ----- an optimizer whose state hangs on one setting ------------------------------------------------
# Plain SGD keeps a momentum buffer only when `momentum` is not 0; its learning rate and weight decay
# need no state. Rebuilt without momentum (and with no scheduler over it), it loses nothing.
_PLAIN_SGD = """
    import torch

    def decay_by_hand(model, loader, base_lr, epochs):
        for epoch in range(epochs):
            lr = base_lr * 0.5 ** (epoch // 10)
            optimizer = torch.optim.SGD(model.parameters(), lr, weight_decay=1e-4, nesterov=False)
            for x, y in loader:
                optimizer.zero_grad()
                torch.nn.functional.mse_loss(model(x), y).backward()
                optimizer.step()

    def fit(net, batches, steps):
        for step in range(steps):
            opt = torch.optim.SGD(net.parameters(), lr=0.1 / (1 + step), momentum=0)
            opt.zero_grad()
            net(batches[step]).sum().backward()
            opt.step()
    """


def test_plain_sgd_without_momentum_rebuilt_per_epoch_is_silent(lint):
    assert lint(_PLAIN_SGD, "TL004") == []


def test_sgd_with_momentum_or_a_scheduler_rebuilt_per_epoch_is_reported(lint):
    momentum = _PLAIN_SGD.replace("lr, weight_decay=1e-4", "lr, 0.9, weight_decay=1e-4")
    findings = lint(momentum, "TL004")
    assert [(f.line, f.code) for f in findings] == [(7, "TL004")]
    assert "momentum buffers" in findings[0].message
    hidden = _PLAIN_SGD.replace("momentum=0)", "momentum=cfg.momentum)")
    assert [f.line for f in lint(hidden, "TL004")] == [15]
    scheduled = _PLAIN_SGD.replace(
        "            for x, y in loader:\n",
        "            warmup = torch.optim.lr_scheduler.LinearLR(optimizer, 0.1)\n            for x, y in loader:\n",
    )
    assert [f.line for f in lint(scheduled, "TL004")] == [7]


# A leaf tensor made anew each iteration and then moved (`x = x.cuda()`) is still the iteration's
# own: an Adam over it cannot be built before the loop. A tensor that outlives the loop, moved in
# it, is not.
_MOVED_LEAF = """
    import torch

    class Dreamer:
        def __init__(self, net, start, on_gpu):
            self.net, self.image, self.on_gpu = net, start, on_gpu

        def dream(self, steps):
            for i in range(steps):
                self.pixels = torch.tensor(self.image, requires_grad=True)
                if self.on_gpu:
                    self.pixels = self.pixels.cuda()
                opt = torch.optim.Adam([self.pixels], lr=0.05)
                self.net.zero_grad()
                (-self.net(self.pixels).max()).backward()
                opt.step()
                self.image = self.pixels.detach().cpu().numpy()
            return self.image
    """


def test_an_optimizer_over_a_leaf_made_and_moved_in_the_iteration_is_silent(lint):
    assert lint(_MOVED_LEAF, "TL004") == []


def test_an_optimizer_over_a_moved_model_that_outlives_the_loop_is_reported(lint):
    source = """
        import torch

        def fit(net, loader, epochs, device):
            for epoch in range(epochs):
                net = net.to(device)
                opt = torch.optim.Adam(net.parameters(), lr=1e-3)
                for x, y in loader:
                    opt.zero_grad()
                    torch.nn.functional.mse_loss(net(x.to(device)), y.to(device)).backward()
                    opt.step()
        """
    findings = lint(source, "TL004")
    assert [(f.line, f.code) for f in findings] == [(7, "TL004")]
    assert findings[0].message.startswith("`torch.optim.Adam(...)` builds a new optimizer in every iteration")


# A loop over classes written out in the code that builds one of each, wraps it (a meta-learning
# wrapper, any project class around it) and trains the wrapper: every iteration is a run of its own.
_CLASS_SWEEP = """
    import torch
    from metalib import MetaWrapper

    def check_linear(data):
        model = torch.nn.Linear(4, 2)
        assert model(data).shape[-1] == 2

    def check_cells(data):
        for cell in [torch.nn.GRU, torch.nn.LSTM]:
            model = cell(4, 2)
            meta = MetaWrapper(model, fast_lr=0.01)
            opt = torch.optim.Adam(meta.parameters(), lr=1e-3)
            out, _ = meta(data)
            opt.zero_grad()
            out.pow(2).mean().backward()
            opt.step()
    """


def test_a_wrapper_of_a_model_built_from_the_loops_class_is_a_run_of_its_own(lint):
    assert lint(_CLASS_SWEEP, "TL004") == [] and lint(_CLASS_SWEEP, "TL003") == []


def test_a_wrapper_of_a_model_that_outlives_the_loop_is_reported(lint):
    outer = _CLASS_SWEEP.replace(
        "        for cell in [torch.nn.GRU, torch.nn.LSTM]:\n            model = cell(4, 2)\n",
        "        model = torch.nn.GRU(4, 2)\n        for cell in [torch.nn.GRU, torch.nn.LSTM]:\n",
    )
    findings = lint(outer, "TL004")
    assert [(f.line, f.code) for f in findings] == [(13, "TL004")]
    assert "`for cell in [torch.nn.GRU, torch.nn.LSTM]`" in findings[0].message


# A gradient-clipping test: for every setting (the outer loop is named for the step it skips), each
# case builds two models and their optimizer, trains a few steps and compares with reference values
# recorded before the loops; nothing a case trains is read by the next case or after the loops.
_CASES_UNDER_A_STEP_NAMED_LOOP = """
    import torch
    import torch.nn as nn

    class Scale(nn.Module):
        def __init__(self, start):
            super().__init__()
            self.w = nn.Parameter(torch.full((3,), float(start)))

        def forward(self, x):
            return (self.w * x).sum()

    def test_skipped_step_matches_reference(x, expected):
        for skip_iter in (0, 1):
            for clip_at in (None, 0.5):
                first = Scale(1)
                second = Scale(2)
                optimizer = torch.optim.SGD(
                    [{"params": first.parameters()}, {"params": second.parameters(), "lr": 0.05}],
                    lr=0.1,
                    momentum=0.9,
                )
                for i in range(3):
                    optimizer.zero_grad()
                    (first(x) + second(x)).backward()
                    if clip_at is not None:
                        torch.nn.utils.clip_grad_norm_(optimizer.param_groups[0]["params"], clip_at)
                    if i != skip_iter:
                        optimizer.step()
                got = torch.cat([first.w.detach(), second.w.detach()])
                assert torch.allclose(got, expected[skip_iter, clip_at])
"""


def test_cases_under_a_step_named_loop_that_keep_nothing_they_train_are_silent(lint):
    assert lint(_CASES_UNDER_A_STEP_NAMED_LOOP, "TL004") == []
    assert lint(_CASES_UNDER_A_STEP_NAMED_LOOP, "TL003") == []


def test_a_case_model_read_after_the_step_named_loop_is_reported(lint):
    # The last case's models are used after the loops: what the loops train outlives them, so the
    # outer `iter` loop is read as one run whose models and optimizer restart each inner iteration.
    kept = _CASES_UNDER_A_STEP_NAMED_LOOP + "        return first.state_dict()\n"
    findings = lint(kept, "TL004")
    assert [(f.line, f.code) for f in findings] == [(18, "TL004")]
    assert "loop at line 15 (`for clip_at in (None, 0.5)`)" in findings[0].message
    assert [(f.line, f.code) for f in lint(kept, "TL003")] == [(16, "TL003"), (17, "TL003")]


def test_a_case_model_read_at_the_top_of_the_next_case_is_reported(lint):
    # The previous case's model is evaluated before the next one is built: state crosses iterations.
    carried = _CASES_UNDER_A_STEP_NAMED_LOOP.replace(
        "            for clip_at in (None, 0.5):\n",
        "            for clip_at in (None, 0.5):\n                if clip_at is not None:\n"
        "                    print(first(x))\n",
    )
    findings = lint(carried, "TL004")
    assert [(f.line, f.code) for f in findings] == [(20, "TL004")]
