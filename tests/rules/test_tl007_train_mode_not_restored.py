"""TL007 train-mode-not-restored: positives and hard negatives shaped like real training scripts."""

from expect_markers import check
from project_helpers import lint_in_project

TRAIN_NO_SWITCH = """
import torch

def train(model, loader, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
"""


# ----- positives ---------------------------------------------------------------------------------
def test_eval_call_in_epoch_loop_never_undone(lint):
    findings = check(
        lint,
        """
        import torch

        model = torch.nn.Sequential(torch.nn.Linear(8, 2), torch.nn.Dropout(0.5))
        for epoch in range(epochs):
            for x, y in train_loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
            model.eval()  # expect: TL007
            with torch.no_grad():
                acc = sum((model(x).argmax(1) == y).sum() for x, y in val_loader)
        """,
        "TL007",
    )
    message = findings[0].message
    assert "`model.eval()`" in message and "line 5" in message and "`model.train()`" in message
    assert findings[0].severity == "error" and findings[0].name == "train-mode-not-restored"


def test_call_into_validate_that_switches_to_eval(lint):
    findings = check(
        lint,
        TRAIN_NO_SWITCH
        + """
def validate(model, loader):
    model.eval()
    with torch.no_grad():
        return [model(x) for x, _ in loader]

def main(optimizer, train_loader, val_loader):
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8))
    for epoch in range(90):
        train(model, train_loader, optimizer)
        validate(model, val_loader)  # expect: TL007
""",
        "TL007",
    )
    assert "`validate(...)` (which calls `model.eval()` at line 11)" in findings[0].message


def test_periodic_evaluation_inside_a_step_loop(lint):
    check(
        lint,
        """
        import torch

        model = torch.nn.Sequential(torch.nn.Linear(8, 2), torch.nn.Dropout(0.5))

        @torch.no_grad()
        def estimate_loss():
            model.eval()
            return sum(model(x).item() for x in val_batches)

        for it in range(max_iters):
            if it % eval_interval == 0:
                print(estimate_loss())  # expect: TL007
            loss = model(*get_batch("train"))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        """,
        "TL007",
    )


def test_train_false_counts_as_eval(lint):
    check(
        lint,
        """
        import torch

        net = torch.nn.Sequential(torch.nn.Linear(8, 2), torch.nn.Dropout(0.5))
        for epoch in range(epochs):
            for x, y in train_loader:
                optimizer.zero_grad()
                loss_fn(net(x), y).backward()
                optimizer.step()
            net.train(False)  # expect: TL007
            evaluate(net)
        """,
        "TL007",
    )


def test_trainer_class_with_eval_in_fit_loop(lint):
    check(
        lint,
        """
        from transformers import GPT2LMHeadModel

        class Trainer:
            def __init__(self):
                self.model = GPT2LMHeadModel.from_pretrained("gpt2")

            def train_epoch(self):
                for batch in self.loader:
                    loss = self.model(**batch).loss
                    self.accelerator.backward(loss)
                    self.optimizer.step()
                    self.optimizer.zero_grad()

            def fit(self):
                for epoch in range(self.epochs):
                    self.train_epoch()
                    self.model.eval()  # expect: TL007
                    self.evaluate()
        """,
        "TL007",
    )


# ----- hard negatives ------------------------------------------------------------------------------
def test_train_at_the_top_of_the_training_function_restores(lint):
    assert not lint(
        """
        import torch

        def train(model, loader, optimizer):
            model.train()
            for x, y in loader:
                optimizer.zero_grad()
                torch.nn.functional.nll_loss(model(x), y).backward()
                optimizer.step()

        def test(model, loader):
            model.eval()
            with torch.no_grad():
                for x, y in loader:
                    model(x)

        for epoch in range(1, 15):
            train(model, train_loader, optimizer)
            test(model, test_loader)
        """,
        "TL007",
    )


def test_nanogpt_estimate_loss_switches_back(lint):
    assert not lint(
        """
        import torch

        @torch.no_grad()
        def estimate_loss():
            model.eval()
            out = [model(*get_batch(split))[1] for split in ("train", "val")]
            model.train()
            return out

        while True:
            if iter_num % eval_interval == 0 and master_process:
                losses = estimate_loss()
            for micro_step in range(gradient_accumulation_steps):
                logits, loss = model(X, Y)
                scaler.scale(loss / gradient_accumulation_steps).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            iter_num += 1
        """,
        "TL007",
    )


def test_phase_loop_switching_modes_is_silent(lint):
    assert not lint(
        """
        import torch

        for epoch in range(num_epochs):
            for phase in ["train", "val"]:
                if phase == "train":
                    model.train()
                else:
                    model.eval()
                for inputs, labels in dataloaders[phase]:
                    optimizer.zero_grad()
                    with torch.set_grad_enabled(phase == "train"):
                        loss = criterion(model(inputs), labels)
                        if phase == "train":
                            loss.backward()
                            optimizer.step()
        """,
        "TL007",
    )


def test_ema_and_teacher_models_stay_in_eval_on_purpose(lint):
    assert not lint(
        """
        for step, batch in enumerate(loader):
            teacher_model.eval()
            model_ema.eval()
            with torch.no_grad():
                target = teacher_model(batch)
            loss = criterion(model(batch), target)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            model_ema.update(model)
        """,
        "TL007",
    )


def test_eval_restored_at_the_end_of_the_iteration_and_after_the_loop(lint):
    assert not lint(
        """
        def fit(model, optimizer, epochs):
            for epoch in range(epochs):
                for x, y in train_loader:
                    optimizer.zero_grad()
                    criterion(model(x), y).backward()
                    optimizer.step()
                model.eval()
                evaluate(model, val_loader)
                model.train()
            model.eval()
            return model
        """,
        "TL007",
    )


def test_restore_inside_a_helper_with_another_parameter_name(lint):
    assert not lint(
        """
        def train_one_epoch(trainable_module, loader, optimizer):
            trainable_module.train()
            for x, y in loader:
                optimizer.zero_grad()
                trainable_module(x).mean().backward()
                optimizer.step()

        def validate(model, loader):
            model.eval()
            return [model(x) for x in loader]

        for epoch in range(10):
            train_one_epoch(model, train_loader, optimizer)
            validate(model, val_loader)
        """,
        "TL007",
    )


def test_validate_before_training_in_the_iteration_is_reported(lint):
    check(
        lint,
        """
        import torchvision

        def validate(model, loader):
            model.eval()
            return [model(x) for x in loader]

        model = torchvision.models.resnet50()
        for epoch in range(10):
            validate(model, val_loader)  # expect: TL007
            for x, y in train_loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
        """,
        "TL007",
    )


def test_deliberate_eval_mode_fine_tuning_before_the_steps_is_silent(lint):
    assert not lint(
        """
        for epoch in range(10):
            model.eval()  # keep frozen batch-norm statistics while fine-tuning the head
            for x, y in train_loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
        """,
        "TL007",
    )


def test_eval_followed_by_leaving_the_loop_is_silent(lint):
    assert not lint(
        """
        def fit(model, optimizer):
            for epoch in range(100):
                for x, y in train_loader:
                    optimizer.zero_grad()
                    criterion(model(x), y).backward()
                    optimizer.step()
                if epoch == last_epoch:
                    model.eval()
                    break
        """,
        "TL007",
    )


def test_frozen_backbone_switched_to_eval_while_a_head_trains_is_silent(lint):
    assert not lint(
        """
        import torch

        head_opt = torch.optim.SGD(head.parameters(), lr=0.1)
        for epoch in range(30):
            for x, y in train_loader:
                with torch.no_grad():
                    feats = backbone(x)
                head_opt.zero_grad()
                criterion(head(feats), y).backward()
                head_opt.step()
            backbone.eval()
            evaluate(backbone, head, val_loader)
        """,
        "TL007",
    )


def test_eval_of_the_model_the_optimizer_trains_is_reported(lint):
    check(
        lint,
        """
        import torch
        import torchvision

        model = torch.hub.load("pytorch/vision", "resnet18") if hub else torchvision.models.resnet18()
        opt = torch.optim.SGD(model.head.parameters(), lr=0.1)
        for epoch in range(30):
            for x, y in train_loader:
                opt.zero_grad()
                criterion(model(x), y).backward()
                opt.step()
            model.eval()  # expect: TL007
            evaluate(model, val_loader)
        """,
        "TL007",
    )


def test_batchnorm_layers_frozen_in_a_modules_walk_are_silent(lint):
    assert not lint(
        """
        import torch.nn as nn

        for epoch in range(epochs):
            model.train()
            for layer in model.encoder.modules():
                if isinstance(layer, nn.BatchNorm2d):
                    layer.eval()
            for x, y in loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
        """,
        "TL007",
    )


def test_context_manager_restoring_the_saved_mode_is_silent(lint):
    assert not lint(
        """
        from contextlib import contextmanager

        @contextmanager
        def eval_mode(net):
            previous = net.training
            net.eval()
            try:
                yield
            finally:
                net.train(previous)

        for step, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()
            if step % 200 == 0:
                with eval_mode(model):
                    report(model)
        """,
        "TL007",
    )


# ----- family 3: the training function owns the mode ------------------------------------------------


def test_linear_probe_whose_training_sets_eval_on_purpose_is_silent(lint):
    assert not lint(
        """
        import torch

        def train(backbone, head, loader, optimizer):
            backbone.eval()  # frozen backbone statistics: linear evaluation protocol
            head.train()
            for images, labels in loader:
                with torch.no_grad():
                    feats = backbone(images)
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(head(feats), labels).backward()
                optimizer.step()

        def validate(backbone, head, loader):
            backbone.eval()
            head.eval()
            with torch.no_grad():
                return sum((head(backbone(x)).argmax(1) == y).sum().item() for x, y in loader)

        optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
        for epoch in range(100):
            train(backbone, head, train_loader, optimizer)
            validate(backbone, head, val_loader)
        """,
        "TL007",
    )


def test_training_function_that_sets_eval_only_under_a_flag_is_reported(lint):
    check(
        lint,
        """
        import torch
        import torchvision

        def train(model, loader, optimizer, freeze_bn):
            if freeze_bn:
                model.eval()
            for images, labels in loader:
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(model(images), labels).backward()
                optimizer.step()

        def validate(model, loader):
            model.eval()
            with torch.no_grad():
                return sum((model(x).argmax(1) == y).sum().item() for x, y in loader)

        model = torchvision.models.densenet121()  # BatchNorm2d
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(100):
            train(model, train_loader, optimizer, args.freeze_bn)
            validate(model, val_loader)  # expect: TL007
        """,
        "TL007",
    )


_TEST_STEP_NEVER_RESTORES = """
    import torch
    from torch import nn

    class FashionMNISTModel(nn.Module):
        def __init__(self, hidden):
            super().__init__()
            self.layer_stack = nn.Sequential(LAYERS)

        def forward(self, x):
            return self.layer_stack(x)

    def train_step(model, loader, loss_fn, optimizer):
        for X, y in loader:
            loss = loss_fn(model(X), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

    def test_step(model, loader, loss_fn):
        model.eval()
        with torch.inference_mode():
            return sum(loss_fn(model(X), y).item() for X, y in loader)

    model = FashionMNISTModel(hidden=10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        train_step(model, train_loader, loss_fn, optimizer)
        test_step(model, test_loader, loss_fn)  # expect: TL007
    """


def test_a_model_without_mode_dependent_layers_left_in_eval_mode_is_silent(lint):
    plain = _TEST_STEP_NEVER_RESTORES.replace("LAYERS", "nn.Flatten(), nn.Linear(784, hidden), nn.ReLU()")
    assert lint(plain, "TL007") == []
    # The same model with a dropout: epochs 2+ train without it.
    check(
        lint,
        _TEST_STEP_NEVER_RESTORES.replace("LAYERS", "nn.Flatten(), nn.Dropout(0.2), nn.Linear(784, hidden)"),
        "TL007",
    )


_RL_TRAINER = """
    import abc
    import torch
    from torch import nn

    class RLTrainer:
        def __init__(self):
            self.policy = nn.Sequential(nn.Linear(16, 16), nn.Dropout(0.1), nn.Linear(16, 4))
            self.optimizer = torch.optim.Adam(self.policy.parameters())

        ROLLOUT

        def step(self, queries):
            rollouts = self.rollout(queries)
            for batch in rollouts:
                self.optimizer.zero_grad()
                self.policy(batch).pow(2).mean().backward()
                self.optimizer.step()

        @torch.inference_mode()
        def evaluate(self, prompts):
            self.policy.eval()
            return [self.policy(p) for p in prompts]

        def train(self, loader):
            for step_idx, queries in enumerate(loader):
                if step_idx % 100 == 0:
                    self.evaluate(eval_prompts)  # expect: TL007
                self.step(queries)
    """


def test_a_training_step_implemented_elsewhere_owns_the_mode(lint):
    # `rollout` is declared here and implemented by subclasses of other files (a PPO rollout that
    # calls `policy.eval()` every step, a Quark loss that calls `policy.train()`): the mode at the
    # next training step cannot be read in this file.
    for declared in (
        "@abc.abstractmethod\n    def rollout(self, queries):\n        raise NotImplementedError",
        "def rollout(self, queries):\n        'Subclasses collect rollouts.'\n        raise NotImplementedError()",
    ):
        source = _RL_TRAINER.replace("ROLLOUT", declared.replace("\n", "\n    "))
        assert lint(source, "TL007") == [], declared


def test_a_training_step_implemented_here_that_never_restores_is_reported(lint):
    source = _RL_TRAINER.replace(
        "ROLLOUT", "def rollout(self, queries):\n            return [q.float() for q in queries]"
    )
    check(lint, source, "TL007")


# ----- `.eval()` of an object that is no torch module -------------------------------------------------
_ROLLOUT_TRAINER = """
import torch
import torch.nn as nn

class Arcade:
    def __init__(self, game):
        self.game = game
        self.training = True

    def eval(self):
        self.training = False

    def reset(self):
        lives = 5 if self.training else 1  # episodes end at the first lost life only in training
        return torch.zeros(4, 84, 84) + lives

class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(4 * 84 * 84, 256), nn.Dropout(0.1), nn.Linear(256, 6))

    def forward(self, x):
        return self.body(x)

def rollout_return(policy, game):
    arcade = Arcade(game)
    arcade.eval(){env_marker}
    {model_switch}
    with torch.no_grad():
        return policy(arcade.reset()[None]).max().item()

policy = Policy()
optimizer = torch.optim.AdamW(policy.parameters(), lr=6e-4)
for epoch in range(5):
    for states, actions in loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(policy(states), actions).backward()
        optimizer.step()
    print(rollout_return(policy, "Pong")){call_marker}
"""


def test_eval_of_the_model_next_to_a_plain_object_is_reported(lint):
    source = _ROLLOUT_TRAINER.format(env_marker="", model_switch="policy.eval()", call_marker="  # expect: TL007")
    (finding,) = check(lint, source, "TL007")
    assert "calls `policy.eval()`" in finding.message and "arcade" not in finding.message


def test_eval_method_of_a_plain_project_class_is_no_mode_switch(lint):
    check(lint, _ROLLOUT_TRAINER.format(env_marker="", model_switch="pass", call_marker=""), "TL007")


# ----- `model.train(flag)` at the start of the training function restores the mode --------------------
_RUN_EPOCH = """
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(32, 64), nn.Dropout(0.2), nn.Linear(64, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

def run_epoch(split):
    is_train = split == "train"
    {switch}
    for x, y in loaders[split]:
        loss = nn.functional.cross_entropy(model(x), y)
        if is_train:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

def probe_accuracy():
    model.train(False)
    with torch.no_grad():
        return sum((model(x).argmax(1) == y).float().mean().item() for x, y in loaders["probe"])

for epoch in range(30):
    run_epoch("train")
    print(probe_accuracy()){marker}
"""


def test_switch_to_eval_without_any_restore_is_reported(lint):
    (finding,) = check(lint, _RUN_EPOCH.format(switch="pass", marker="  # expect: TL007"), "TL007")
    assert "calls `model.train(False)`" in finding.message


def test_train_with_a_flag_that_may_be_true_restores_the_mode(lint):
    check(lint, _RUN_EPOCH.format(switch="model.train(is_train)", marker=""), "TL007")


def test_train_with_a_flag_that_is_always_false_restores_nothing(lint):
    source = _RUN_EPOCH.format(switch="frozen = False\n    model.train(frozen)", marker="  # expect: TL007")
    check(lint, source, "TL007")


# ----- a method of the model that sets the mode of what it trains --------------------------------

_HEAD_ON_FROZEN_ENCODER = """
import torch
import torch.nn as nn
import torch.nn.functional as F

class Probe(nn.Module):
    def __init__(self, encoder, n_classes):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Sequential(nn.Dropout(0.2), nn.Linear(768, n_classes))

    def {method}(self):
        for p in self.encoder.parameters():
            p.requires_grad = False
        {body}

    def forward(self, x):
        return self.head(self.encoder(x).mean(1))

def fit_epoch(probe, loader, optimizer):
    probe.{method}()
    for x, y in loader:
        optimizer.zero_grad()
        F.cross_entropy(probe(x), y).backward()
        optimizer.step()

def evaluate(probe, loader):
    probe.eval()
    with torch.no_grad():
        return sum((probe(x).argmax(1) == y).sum().item() for x, y in loader)

probe = Probe(Encoder(), n_classes=4)
optimizer = torch.optim.Adam(probe.head.parameters(), lr=1e-4)
for epoch in range(10):
    fit_epoch(probe, train_loader, optimizer)
    evaluate(probe, val_loader){marker}
"""


def test_model_method_that_switches_the_trained_head_back_restores_the_mode(lint):
    source = _HEAD_ON_FROZEN_ENCODER.format(method="start_training", body="self.head.train()", marker="")
    check(lint, source, "TL007")


def test_model_method_that_switches_nothing_restores_nothing(lint):
    source = _HEAD_ON_FROZEN_ENCODER.format(method="start_training", body="self.steps = 0", marker="  # expect: TL007")
    (finding,) = check(lint, source, "TL007")
    assert "`evaluate(...)` (which calls `probe.eval()` at line 28)" in finding.message


# Building an object of a class this file defines, handed a loss and an optimizer, runs its
# `__init__` only: no training step (unlike an unknown `loss_scaler(loss, optimizer)`).
_CHECKPOINTS = """
import glob
import torch

class Runner:
    def __init__(self, model, optimizer, loss_fn):
        self.model = model
        self.optimizer = optimizer
        self.loss_fn = loss_fn

    def fit_epoch(self, batches):
        for inputs, targets in batches:
            self.optimizer.zero_grad()
            self.loss_fn(self.model(inputs), targets).backward()
            self.optimizer.step()

    @torch.no_grad()
    def score(self, batches):
        return sum(self.loss_fn(self.model(x), y).item() for x, y in batches)

def make_runner(model, optimizer, loss_fn):
    return Runner(model, optimizer, loss_fn)

def score_checkpoint(path, batches, build):
    model = build()
    model.load_state_dict(torch.load(path))
    model.eval()
    return make_runner(model, None, loss_fn=torch.nn.MSELoss()).score(batches)
"""


def test_a_loop_over_checkpoints_that_only_scores_them_is_no_training_loop(lint):
    source = (
        _CHECKPOINTS
        + """
def score_all(folder, batches, build):
    scores = {}
    for path in sorted(glob.glob(folder + "/*.pt")):
        scores[path] = score_checkpoint(path, batches, build)
    return scores
"""
    )
    assert lint(source, "TL007") == []
    assert lint(source, "TL003") == []


def test_a_loop_stepping_through_an_unknown_callable_handed_loss_and_optimizer_is_reported(lint):
    """An imported class's instance called with the loss and the optimizer (timm's loss scaler)
    still hides a backward and a step: the loop trains."""
    findings = check(
        lint,
        """
        import torch
        from timm.utils import NativeScaler

        def fit(loader, epochs):
            model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.2))
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            loss_scaler = NativeScaler()
            for epoch in range(epochs):
                for inputs, targets in loader:
                    loss = torch.nn.functional.mse_loss(model(inputs), targets)
                    loss_scaler(loss, optimizer)
                model.eval()  # expect: TL007
                with torch.no_grad():
                    print(epoch, model(inputs).mean().item())
        """,
        "TL007",
    )
    assert "inside the training loop at line 9" in findings[0].message, findings[0].message


def test_a_loop_over_checkpoints_scored_through_a_runner_built_in_another_file(tmp_path):
    """``make_runner`` of another file builds a ``Runner`` handed a loss and an optimizer
    argument: a constructor, not a hidden training step, so the loop trains nothing."""
    runner_module = _CHECKPOINTS.split("def score_checkpoint")[0]
    script = """
    import glob
    import torch
    from runners import make_runner

    def score_checkpoint(path, batches, optimizer):
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.1))
        model.load_state_dict(torch.load(path))
        model.eval()
        return make_runner(model, optimizer, loss_fn=torch.nn.MSELoss()).score(batches)

    def score_all(folder, batches, optimizer):
        for path in sorted(glob.glob(folder + "/*.pt")):
            print(path, score_checkpoint(path, batches, optimizer))
    """
    files = {"runners.py": runner_module, "score.py": script}
    assert lint_in_project(tmp_path, files, "score.py", "TL007") == []
    assert lint_in_project(tmp_path, files, "score.py", "TL003") == []


# ----- evaluation on a separate network built from the trained one's weights -------------------

CODE = "TL007"

_EVAL_ON_A_REBUILT_NETWORK = """
    import torch
    from torch import nn

    class Detector(nn.Module):
        def __init__(self, classes, deploy=False):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.Dropout(0.1))
            self.head = nn.Conv2d(16, classes, 1)

        def forward(self, x):
            return self.head(self.body(x))

    @torch.no_grad()
    def measure(net, loader):
        net.eval()
        return sum((net(x).argmax(1) == y).float().mean() for x, y in loader)

    def fit(train_loader, val_loader, epochs):
        net = Detector(10)
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        net.train()
        for epoch in range(epochs):
            for x, y in train_loader:
                opt.zero_grad()
                nn.functional.cross_entropy(net(x), y).backward()
                opt.step()
            EVALUATION
"""


def test_eval_of_a_network_rebuilt_in_the_loop_leaves_the_trained_model_alone(lint):
    evaluation = (
        "deployed = Detector(10, deploy=True)\n"
        "            deployed.load_state_dict(net.state_dict())\n"
        "            print(measure(deployed, val_loader))"
    )
    assert lint(_EVAL_ON_A_REBUILT_NETWORK.replace("EVALUATION", evaluation), CODE) == []


def test_eval_of_the_trained_model_itself_is_still_reported(lint):
    for evaluation in (
        "print(measure(net, val_loader))  # expect: TL007",
        # the same object under a second name: no constructor in between
        "alias = net\n            print(measure(alias, val_loader))  # expect: TL007",
    ):
        findings = check(lint, _EVAL_ON_A_REBUILT_NETWORK.replace("EVALUATION", evaluation), CODE)
        assert (
            "(which calls `net.eval()` at line 16) switches the model to eval mode inside the training loop at line 23"
            in findings[0].message
        )


# ----- a model that trains itself: `self.fit()` evaluating through its own `predict()` ------------------

_SELF_TRAINING_MODEL = """
    import torch
    from torch import nn


    class Ranker(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.tower = nn.Sequential(nn.Linear(width, 64), LAYER, nn.Linear(64, 1))
            self.opt = torch.optim.Adagrad(self.parameters(), lr=0.05)

        def forward(self, x):
            return self.tower(x).squeeze(-1)

        def fit(self, loader, val_x, val_y, epochs=5):
            net = self.train()
            for epoch in range(epochs):
                for x, y in loader:
                    self.opt.zero_grad()
                    nn.functional.binary_cross_entropy_with_logits(net(x), y).backward()
                    self.opt.step()
                print(epoch, self.score(val_x, val_y))  # expect: TL007

        def score(self, x, y):
            return ((self.predict(x) > 0).float() == y).float().mean().item()

        def predict(self, x):
            net = self.eval()
            with torch.no_grad():
                out = net(x)
            RESTORE
            return out
"""


def test_self_evaluation_two_calls_deep_is_reported(lint):
    source = _SELF_TRAINING_MODEL.replace("LAYER", "nn.Dropout(0.3)").replace("RESTORE", "pass")
    findings = check(lint, source, CODE)
    assert findings[0].message.startswith(
        "`self.score(...)` (which calls `self.eval()` at line 28) switches the model to eval mode"
        " inside the training loop at line 17"
    )


def test_self_evaluation_that_restores_train_mode_is_not_reported(lint):
    source = _SELF_TRAINING_MODEL.replace("LAYER", "nn.Dropout(0.3)").replace("RESTORE", "self.train()")
    assert lint(source.replace("  # expect: TL007", ""), CODE) == []


def test_self_evaluation_of_a_model_without_mode_dependent_layers_is_not_reported(lint):
    source = _SELF_TRAINING_MODEL.replace("LAYER", "nn.ReLU()").replace("RESTORE", "pass")
    assert lint(source.replace("  # expect: TL007", ""), CODE) == []


def test_self_evaluation_of_a_base_class_whose_subclass_has_dropout_is_reported(lint):
    source = _SELF_TRAINING_MODEL.replace("LAYER", "nn.ReLU()").replace("RESTORE", "pass")
    source += """
    class DropoutRanker(Ranker):
        def __init__(self, width):
            super().__init__(width)
            self.tower.insert(1, nn.Dropout(0.5))
    """
    check(lint, source, CODE)


# ----- family: a command-line flag that can only be true picks the EMA copy (heldout28) ----------------

_EMA_FLAG_SCRIPT = """
    import argparse
    import copy

    import torch
    from torch import nn


    class SmoothedCopy:
        def __init__(self, model, decay):
            self.module = copy.deepcopy(model)
            self.decay = decay


    def evaluate(model, loader):
        model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in loader:
                correct += (model(x).argmax(1) == y).sum().item()
        return correct


    def fit(opts, model, ema_model, optimizer, train_loader, val_loader):
        for epoch in range(opts.epochs):
            for x, y in train_loader:
                optimizer.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
            if opts.ema:
                eval_net = ema_model.module
            else:
                eval_net = model
            acc = evaluate(eval_net, val_loader)MARK
            print(epoch, acc)


    def main():
        parser = argparse.ArgumentParser(description="semi-supervised training")
        parser.add_argument("--epochs", type=int, default=100)
        parser.add_argument("--ema", ACTION)
        parser.add_argument("--ema-decay", type=float, default=0.999)
        opts = parser.parse_args()EXTRA
        model = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.Flatten(), nn.LazyLinear(10))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.03)
        fit(opts, model, SmoothedCopy(model, opts.ema_decay), optimizer, train_loader, val_loader)


    if __name__ == "__main__":
        main()
    """


def _ema_flag_script(action: str, extra: str = "", reported: bool = True) -> str:
    mark = "  # expect: TL007" if reported else ""
    return _EMA_FLAG_SCRIPT.replace("ACTION", action).replace("EXTRA", extra).replace("MARK", mark)


def test_flag_that_may_be_false_lets_the_trained_model_be_evaluated(lint):
    findings = check(lint, _ema_flag_script('action="store_true"'), CODE)
    assert findings[0].message.startswith(
        "`evaluate(...)` (which calls `model.eval()` at line 16) switches the model to eval mode"
        " inside the training loop at line 25"
    )


def test_flag_always_true_hands_only_the_ema_copy_to_evaluation(lint):
    # store_true with default=True: `opts.ema` is True on every command line.
    check(lint, _ema_flag_script('action="store_true", default=True', reported=False), CODE)


def test_store_false_flag_always_false_hands_only_the_ema_copy(lint):
    source = _ema_flag_script('action="store_false", default=False', reported=False)
    check(lint, source.replace("if opts.ema:", "if not opts.ema:").replace('"--ema"', '"--no-ema", dest="ema"'), CODE)


def test_always_true_flag_overridden_in_the_file_is_not_constant(lint):
    for extra in ("\n        opts.ema = opts.epochs > 10", "\n        parser.set_defaults(**config)"):
        check(lint, _ema_flag_script('action="store_true", default=True', extra=extra), CODE)
    check(
        lint, _ema_flag_script('action="store_true", default=True', extra="\n        vars(opts).update(config)"), CODE
    )


def test_always_true_flag_of_another_parser_is_not_constant(lint):
    # `opts` comes from a second parser that declares `--ema` as an ordinary switch.
    extra = (
        '\n        other = argparse.ArgumentParser()\n        other.add_argument("--ema", action="store_true")'
        "\n        opts = other.parse_args()"
    )
    check(lint, _ema_flag_script('action="store_true", default=True', extra=extra), CODE)


# ----- an evaluation tried once, then the process ends ---------------------------------------------
EVALUATE_THEN_EXIT = """
import os
import torch
from torch import nn

net = nn.Sequential(nn.Linear(32, 32), nn.BatchNorm1d(32), nn.Linear(32, 4))
optimizer = torch.optim.AdamW(net.parameters())

def evaluate(batches):
    net.eval()
    with torch.no_grad():
        return sum(nn.functional.cross_entropy(net(x), y).item() for x, y in batches)

for epoch in range(10):
    for step, (x, y) in enumerate(train_batches):
        nn.functional.cross_entropy(net(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()
        dev_loss = evaluate(dev_batches){marker}
{stop}
"""


def test_an_evaluation_followed_by_an_exit_is_silent(lint):
    for stop in ("        exit()", "        print(step, dev_loss)\n        os._exit(0)"):
        check(lint, EVALUATE_THEN_EXIT.format(marker="", stop=stop), "TL007")
    # The exit inside a helper of the file, called after the evaluation: the process ends there too.
    helper = "def finish(loss):\n    print(loss)\n    os._exit(0)\n\nfor epoch"
    source = EVALUATE_THEN_EXIT.format(marker="", stop="        finish(dev_loss)").replace("for epoch", helper)
    check(lint, source, "TL007")


def test_an_evaluation_followed_by_a_conditional_exit_is_still_reported(lint):
    marker = "  # expect: TL007"
    for stop in ("        print(step, dev_loss)", "        if step > 100:\n            exit()"):
        findings = check(lint, EVALUATE_THEN_EXIT.format(marker=marker, stop=stop), "TL007")
        assert findings[0].line == 19 and findings[0].code == "TL007"
        assert "`evaluate(...)` (which calls `net.eval()` at line 10)" in findings[0].message
