"""TL003 model-in-loop: positives and hard negatives shaped like real training scripts."""

import pytest
from expect_markers import check


# ----- positives ---------------------------------------------------------------------------------
def test_model_rebuilt_every_epoch_while_optimizer_built_once(lint):
    findings = check(
        lint,
        """
        import torch
        import torch.nn as nn

        class Classifier(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))

            def forward(self, x):
                return self.body(x)

        model = Classifier()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        for epoch in range(20):
            model = Classifier().cuda()  # expect: TL003
            for images, labels in train_loader:
                optimizer.zero_grad()
                loss = nn.functional.cross_entropy(model(images), labels)
                loss.backward()
                optimizer.step()
        """,
        "TL003",
    )
    message = findings[0].message
    assert "`Classifier(...)`" in message and "line 15" in message
    assert "optimizer built outside the loop keeps updating the old model" in message
    assert findings[0].severity == "error" and findings[0].name == "model-in-loop"


def test_torchvision_model_built_per_batch(lint):
    findings = check(
        lint,
        """
        import torch
        from torchvision.models import resnet50

        def train(loader, device):
            for step, (x, y) in enumerate(loader):
                net = resnet50(weights=None).to(device)  # expect: TL003
                opt = torch.optim.Adam(net.parameters())
                loss = torch.nn.functional.cross_entropy(net(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        """,
        "TL003",
    )
    assert "`resnet50(...)`" in findings[0].message


def test_from_pretrained_inside_function_called_once_per_epoch(lint):
    findings = check(
        lint,
        """
        import torch
        from transformers import AutoModelForSequenceClassification

        def run_epoch(loader, optimizer):
            model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")  # expect: TL003
            model.train()
            for batch in loader:
                out = model(**batch)
                out.loss.backward()
                optimizer.step()
                optimizer.zero_grad()

        def main(loader, optimizer, num_epochs):
            for epoch in range(num_epochs):
                run_epoch(loader, optimizer)
        """,
        "TL003",
    )
    assert "through the call at line 16" in findings[0].message


def test_local_factory_called_in_epoch_loop_reports_the_call_site(lint):
    findings = check(
        lint,
        """
        import torch
        import torch.nn as nn

        def build_model(width):
            return nn.Sequential(nn.Linear(32, width), nn.GELU(), nn.Linear(width, 1))

        opt = None
        for epoch in range(args.epochs):
            model = build_model(128)  # expect: TL003
            if opt is None:
                opt = torch.optim.AdamW(model.parameters())
            for x, y in loader:
                opt.zero_grad()
                (model(x) - y).pow(2).mean().backward()
                opt.step()
        """,
        "TL003",
    )
    assert "`build_model(...)`" in findings[0].message


def test_model_rebuilt_in_neutral_loop_around_epoch_function_with_outer_optimizer(lint):
    check(
        lint,
        """
        import torch
        import torch.nn as nn

        def train_one_epoch(model, optimizer, loader):
            for x, y in loader:
                optimizer.zero_grad()
                nn.functional.mse_loss(model(x), y).backward()
                optimizer.step()

        model = nn.Linear(8, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(100):
            model = nn.Linear(8, 1)  # expect: TL003
            train_one_epoch(model, optimizer, loader)
        """,
        "TL003",
    )


# ----- hard negatives ------------------------------------------------------------------------------
def test_kfold_outer_loop_with_whole_training_run_is_silent(lint):
    assert not lint(
        """
        import torch
        import torch.nn as nn
        from sklearn.model_selection import KFold

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(20, 2)

            def forward(self, x):
                return self.fc(x)

        splitter = KFold(n_splits=5, shuffle=True)
        for k, (train_idx, val_idx) in enumerate(splitter.split(X)):
            model = Net()
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
            for epoch in range(10):
                for xb, yb in make_loader(train_idx):
                    optimizer.zero_grad()
                    nn.functional.cross_entropy(model(xb), yb).backward()
                    optimizer.step()
        """,
        "TL003",
    )


def test_hyperparameter_sweep_calling_a_training_function_is_silent(lint):
    assert not lint(
        """
        import torch
        import torchvision

        def fit(lr, loader):
            model = torchvision.models.resnet18(num_classes=10)
            opt = torch.optim.SGD(model.parameters(), lr=lr)
            while True:
                x, y = next(loader)
                opt.zero_grad()
                torch.nn.functional.cross_entropy(model(x), y).backward()
                opt.step()

        for lr in (0.1, 0.03, 0.01):
            fit(lr, loader)
        for seed in range(3):
            torch.manual_seed(seed)
            fit(0.1, loader)
        """,
        "TL003",
    )


def test_federated_rounds_and_clients_are_silent(lint):
    assert not lint(
        """
        import copy
        import torch
        import torch.nn as nn

        global_model = nn.Linear(10, 2)
        for rnd in range(num_rounds):
            updates = []
            for client_loader in client_loaders:
                local = nn.Linear(10, 2)
                local.load_state_dict(global_model.state_dict())
                opt = torch.optim.SGD(local.parameters(), lr=0.01)
                for x, y in client_loader:
                    opt.zero_grad()
                    nn.functional.cross_entropy(local(x), y).backward()
                    opt.step()
                updates.append(local.state_dict())
        """,
        "TL003",
    )


def test_loss_modules_weightless_layers_and_deepcopy_in_loop_are_silent(lint):
    assert not lint(
        """
        import copy
        import torch
        import torch.nn as nn

        class FocalLoss(nn.Module):
            def forward(self, logits, target):
                return nn.functional.cross_entropy(logits, target)

        model = nn.Linear(10, 3)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(5):
            criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
            focal = FocalLoss()
            best = copy.deepcopy(model)
            for x, y in loader:
                act = nn.Softmax(dim=1)
                optimizer.zero_grad()
                (criterion(model(x), y) + focal(act(model(x)), y)).backward()
                optimizer.step()
        """,
        "TL003",
    )


def test_layers_built_in_loops_of_init_and_evaluation_checkpoints_are_silent(lint):
    assert not lint(
        """
        import torch
        import torch.nn as nn

        class Tower(nn.Module):
            def __init__(self, depth):
                super().__init__()
                layers = []
                for _ in range(depth):
                    layers.append(nn.Linear(64, 64))
                self.layers = nn.ModuleList(layers)

        def evaluate_checkpoint(path, loader):
            model = Tower(4)
            model.load_state_dict(torch.load(path))
            model.eval()
            with torch.no_grad():
                return sum(model(x).sum() for x in loader)

        model = Tower(4)
        opt = torch.optim.Adam(model.parameters())
        for epoch in range(3):
            for x, y in loader:
                opt.zero_grad()
                model(x).sum().backward()
                opt.step()
            evaluate_checkpoint("last.pt", val_loader)
        """,
        "TL003",
    )


def test_model_built_once_under_condition_in_loop_is_silent(lint):
    assert not lint(
        """
        import torch
        import torch.nn as nn

        model = None
        for step, (x, y) in enumerate(loader):
            if model is None:
                model = nn.Linear(x.shape[1], 1)
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        """,
        "TL003",
    )


@pytest.mark.parametrize("header", ["for trial in range(n_trials):", "for task_id, task in enumerate(tasks):"])
def test_trial_and_task_loops_around_single_loop_runs_are_silent(lint, header):
    assert not lint(
        f"""
        import torch
        import torch.nn as nn

        {header}
            model = nn.Linear(4, 1)
            optimizer = torch.optim.Adam(model.parameters())
            for x, y in loader:
                optimizer.zero_grad()
                nn.functional.mse_loss(model(x), y).backward()
                optimizer.step()
        """,
        "TL003",
    )


def test_model_copy_loaded_with_weights_for_evaluation_each_epoch_is_silent(lint):
    assert not lint(
        """
        import torch
        import torch.nn as nn

        model = nn.Linear(16, 4)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(20):
            for x, y in loader:
                opt.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                opt.step()
            eval_model = nn.Linear(16, 4)
            eval_model.load_state_dict(model.state_dict())
            evaluate(eval_model)
        """,
        "TL003",
    )


def test_model_zoo_helpers_are_not_model_constructors(lint):
    assert not lint(
        """
        import torch
        from timm.models import create_model, model_parameters, load_checkpoint

        model = create_model("resnet50")
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for batch_idx, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            loss_fn(model(x), y).backward()
            torch.nn.utils.clip_grad_norm_(model_parameters(model, exclude_head=True), 1.0)
            optimizer.step()
        """,
        "TL003",
    )


def test_function_that_builds_trains_and_returns_its_model_is_reported_once(lint):
    check(
        lint,
        """
        import torch
        import torch.nn as nn

        def run_epoch(loader):
            model = nn.Linear(8, 2)  # expect: TL003
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                opt.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                opt.step()
            return model

        for epoch in range(10):
            model = run_epoch(train_loader)
        """,
        "TL003",
    )


# ----- a network run only with autograd off is not the model being trained --------------------


def test_noise_network_rebuilt_each_epoch_and_run_under_no_grad_is_not_reported(lint):
    check(
        lint,
        """
        import torch
        from torch import nn
        from torch.nn import functional as F

        class Perturber(nn.Module):
            def __init__(self, width):
                super().__init__()
                self.conv = nn.Conv2d(3, width, 3, padding=1)
                self.back = nn.Conv2d(width, 3, 3, padding=1)
            def forward(self, x):
                return x + self.back(torch.relu(self.conv(x)))

        def run_epoch(model, optimizer, loader):
            perturb = Perturber(8).train().cuda()
            for images, labels in loader:
                images = images.cuda()
                with torch.no_grad():
                    perturb.apply(reset_weights)
                    images = perturb(images)
                loss = F.cross_entropy(model(images), labels.cuda())
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()

        def main(model, optimizer, loader, epochs):
            for epoch in range(epochs):
                run_epoch(model, optimizer, loader)
        """,
        "TL003",
    )


def test_rebuilt_network_also_run_with_autograd_on_is_still_reported(lint):
    findings = check(
        lint,
        """
        import torch
        from torch import nn
        from torch.nn import functional as F

        class Classifier(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(32, 10)
            def forward(self, x):
                return self.fc(x)

        def run_epoch(loader):
            model = Classifier().train().cuda()  # expect: TL003
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for features, labels in loader:
                with torch.no_grad():
                    warm = model(features)
                loss = F.cross_entropy(model(features), labels)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()

        def main(loader, epochs):
            for epoch in range(epochs):
                run_epoch(loader)
        """,
        "TL003",
    )
    assert findings[0].message.startswith("`Classifier(...)` builds a new model in every iteration of")
