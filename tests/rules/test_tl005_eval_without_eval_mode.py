"""TL005 eval-without-eval-mode: positives and hard negatives shaped like real training scripts."""

import pytest
from expect_markers import assert_marked, check

MNIST_TRAIN = """
import torch
import torch.nn.functional as F

def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
"""


# ----- positives ---------------------------------------------------------------------------------
def test_test_function_without_eval_called_after_training(lint):
    findings = check(
        lint,
        MNIST_TRAIN
        + """
def test(model, device, test_loader):
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            output = model(data.to(device))  # expect: TL005
            correct += output.argmax(1).eq(target).sum().item()
    return correct

def main(args, device, train_loader, test_loader, optimizer):
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 8, 3), torch.nn.BatchNorm2d(8))
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)
""",
        "TL005",
    )
    message = findings[0].message
    assert "`test()`" in message and "called at line 26" in message
    assert "model.eval()" in message and "dropout" in message
    assert findings[0].severity == "warning" and findings[0].name == "eval-without-eval-mode"


def test_inline_validation_loop_in_epoch_loop(lint):
    findings = check(
        lint,
        """
        import torch
        from transformers import BertForSequenceClassification

        model = BertForSequenceClassification.from_pretrained("bert-base-uncased")
        for epoch in range(num_epochs):
            model.train()
            for step, batch in enumerate(train_dataloader):
                loss = model(**batch).loss
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
            for step, batch in enumerate(eval_dataloader):
                with torch.no_grad():
                    outputs = model(**batch)  # expect: TL005
                predictions = outputs.logits.argmax(dim=-1)
        """,
        "TL005",
    )
    assert "the evaluation loop at line 13" in findings[0].message


def test_evaluate_helper_on_global_model_in_script(lint):
    check(
        lint,
        """
        import torch
        import torch.nn as nn

        model = nn.Sequential(nn.Linear(10, 10), nn.Dropout(0.5), nn.Linear(10, 2))
        opt = torch.optim.Adam(model.parameters())

        @torch.no_grad()
        def evaluate_accuracy():
            hits = 0
            for x, y in val_batches:
                hits += (model(x).argmax(1) == y).sum().item()  # expect: TL005
            return hits

        for it in range(1000):
            x, y = next(train_iter)
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            if it % 100 == 0:
                print(evaluate_accuracy())
        """,
        "TL005",
    )


def test_trainer_method_validate_called_after_train_step_loop(lint):
    findings = check(
        lint,
        """
        import torch

        class Trainer:
            def __init__(self):
                self.model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.2))

            def train_epoch(self):
                self.model.train()
                for x, y in self.train_loader:
                    self.optimizer.zero_grad()
                    self.criterion(self.model(x), y).backward()
                    self.optimizer.step()

            @torch.no_grad()
            def validate(self):
                total = 0.0
                for x, y in self.val_loader:
                    total += self.criterion(self.model(x), y).item()  # expect: TL005
                return total

            def fit(self, epochs):
                for epoch in range(epochs):
                    self.train_epoch()
                    self.validate()
        """,
        "TL005",
    )
    assert "called at line 25" in findings[0].message


def test_eval_undone_by_train_before_the_validation_loop(lint):
    check(
        lint,
        """
        import torch

        def run_epoch(model, train_loader, val_loader, optimizer):
            model.eval()
            model.train()
            for x, y in train_loader:
                optimizer.zero_grad()
                model(x).mean().backward()
                optimizer.step()
            with torch.no_grad():
                for x, y in val_loader:
                    score = model(x)  # expect: TL005

        run_epoch(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout()), train_loader, val_loader, opt)
        """,
        "TL005",
    )


def test_self_contained_evaluation_function_without_callers_is_unknown(lint):
    # Nothing in the file says what `model` is built of: it may well compute the same in both
    # modes (until issue 10's inversion this was reported).
    check(
        lint,
        """
        import torch

        def evaluate(model, loader):
            with torch.no_grad():
                return [model(x).argmax(1) for x, _ in loader]
        """,
        "TL005",
    )


# ----- hard negatives ------------------------------------------------------------------------------
def test_pytorch_examples_mnist_is_silent(lint):
    assert not lint(
        MNIST_TRAIN
        + """
def test(model, device, test_loader):
    model.eval()
    with torch.no_grad():
        for data, target in test_loader:
            output = model(data.to(device))

def main(args, model, device, train_loader, test_loader, optimizer):
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)
""",
        "TL005",
    )


def test_nanogpt_estimate_loss_is_silent(lint):
    assert not lint(
        """
        import torch

        @torch.no_grad()
        def estimate_loss():
            out = {}
            model.eval()
            for split in ['train', 'val']:
                losses = torch.zeros(eval_iters)
                for k in range(eval_iters):
                    X, Y = get_batch(split)
                    with ctx:
                        logits, loss = model(X, Y)
                    losses[k] = loss.item()
                out[split] = losses.mean()
            model.train()
            return out

        while True:
            if iter_num % eval_interval == 0:
                losses = estimate_loss()
            for micro_step in range(gradient_accumulation_steps):
                with ctx:
                    logits, loss = model(X, Y)
                    loss = loss / gradient_accumulation_steps
                scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
        """,
        "TL005",
    )


def test_validate_helper_called_after_eval_inside_no_grad_is_silent(lint):
    assert not lint(
        """
        import torch

        def validate(model, loader, criterion):
            return sum(criterion(model(x), y).item() for x, y in loader)

        for epoch in range(10):
            model.train()
            for x, y in train_loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
            model.eval()
            with torch.no_grad():
                val_loss = validate(model, val_loader, criterion)
        """,
        "TL005",
    )


def test_lightning_hooks_and_module_methods_are_silent(lint):
    assert not lint(
        """
        import torch
        import lightning as L

        class LitClassifier(L.LightningModule):
            def __init__(self, model):
                super().__init__()
                self.model = model

            def validation_step(self, batch, batch_idx):
                x, y = batch
                self.log("val_loss", torch.nn.functional.cross_entropy(self.model(x), y))

            def test_step(self, batch, batch_idx):
                x, y = batch
                return self.model(x)

            def predict(self, x):
                return self.model(x)
        """,
        "TL005",
    )


def test_inference_script_that_sets_eval_once_and_detectron_style_context_are_silent(lint):
    assert not lint(
        """
        import torch
        from contextlib import ExitStack

        model = build_model(cfg)
        model.load_state_dict(torch.load("best.pt"))
        model.eval()

        def predict(images):
            with torch.inference_mode():
                return model(images)

        def inference_on_dataset(model, data_loader):
            with ExitStack() as stack:
                stack.enter_context(inference_context(model))
                stack.enter_context(torch.no_grad())
                for inputs in data_loader:
                    outputs = model(inputs)

        for batch in test_loader:
            print(predict(batch))
        inference_on_dataset(model, test_loader)
        """,
        "TL005",
    )


def test_evaluation_function_receiving_model_from_outside_is_not_judged(lint):
    assert not lint(
        """
        def evaluate(model, loader, metric):
            for x, y in loader:
                metric.update(model(x), y)
            return metric.compute()
        """,
        "TL005",
    )


# ----- family 8: no silent exemption by path --------------------------------------------------------

_HELPERS = """
    import torch

    def train_epoch(model, loader, optimizer):
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()

    def evaluate(model, loader):
        return sum((model(x).argmax(1) == y).sum().item() for x, y in loader)  # expect: TL005, TL006

    def fit(model, train_loader, val_loader, optimizer):
        for epoch in range(10):
            train_epoch(model, train_loader, optimizer)
            print(evaluate(model, val_loader))

    fit(torch.nn.Sequential(torch.nn.Linear(4, 2), torch.nn.Dropout(0.5)), train_loader, val_loader, optimizer)
    """


@pytest.mark.parametrize(
    "path", ["tests/helpers.py", "/home/me/project/tests/helpers.py", "test_helpers.py", "conftest.py", "train.py"]
)
def test_the_same_code_gives_the_same_findings_wherever_it_lies(lint, path):
    assert_marked(lint(_HELPERS, "TL005", "TL006", path=path), _HELPERS, ("TL005", "TL006"))


def test_unit_tests_are_told_by_what_they_do(lint):
    source = """
        import unittest
        import torch

        def test_model_forward():
            model = load_trained("ckpt.pt")
            for x, _ in val_loader:
                assert model(x).shape == (2, 10)

        class ModelTestMixin:
            def _test_eval(self, loader):
                self.model.eval()
                return [self.model(x) for x, _ in loader]

        class ResNetTest(ModelTestMixin, unittest.TestCase):
            def setUp(self):
                self.model = load_trained("ckpt.pt")

            def test_eval(self):
                self.assertEqual(len(self._test_eval(val_loader)), 4)
        """
    for path in ("tests/test_forward.py", "train.py"):
        assert not lint(source, "TL005", path=path) and not lint(source, "TL006", path=path)


def test_from_pretrained_inference_script_is_silent(lint):
    assert not lint(
        """
        import torch
        from transformers import AutoModelForSequenceClassification

        model = AutoModelForSequenceClassification.from_pretrained("distilbert-base-uncased")
        with torch.no_grad():
            for batch in test_dataloader:
                logits = model(**batch).logits
        """,
        "TL005",
    )


def test_module_level_evaluation_loop_of_a_built_model_is_reported(lint):
    check(
        lint,
        """
        import torch
        import torchvision

        model = torchvision.models.resnet18()
        model.load_state_dict(torch.load("best.pt"))
        with torch.no_grad():
            for x, y in test_loader:
                pred = model(x).argmax(1)  # expect: TL005
        """,
        "TL005",
    )


def test_validation_loop_inside_train_and_evaluate_is_reported(lint):
    check(
        lint,
        """
        import torch

        def train_and_evaluate(model, optimizer, train_loader, val_loader):
            model.train()
            for x, y in train_loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
            with torch.no_grad():
                for x, y in val_loader:
                    metric.update(model(x), y)  # expect: TL005

        train_and_evaluate(torch.nn.LSTM(8, 8, 2, dropout=0.2), optimizer, train_loader, val_loader)
        """,
        "TL005",
    )


def test_calls_that_only_mention_a_model_are_not_model_calls(lint):
    # Shaped like a trainer's evaluation loop: hooks, helpers and tokenizers are no forward pass.
    assert not lint(
        """
        def run_evaluation(trainer, batches, tokenizer):
            for batch in batches:
                call._call_lightning_module_hook(trainer, "on_validation_start")
                for name, mod in model.named_modules():
                    pass
                restored = load_model_from_checkpoint(trainer.ckpt_path)
                tokens = tokenizer(batch["text"])
        """,
        "TL005",
    )


def test_inference_method_of_a_class_with_forward_is_silent(lint):
    # Like detectron2's meta-architectures: the nn.Module base lives in another file.
    assert not lint(
        """
        from .rcnn import GeneralizedRCNN

        class PanopticNet(GeneralizedRCNN):
            def forward(self, batched_inputs):
                if not self.training:
                    return self.inference(batched_inputs)
                return self.losses(batched_inputs)

            def inference(self, batched_inputs):
                features = self.backbone(batched_inputs)
                return self.head(features)
        """,
        "TL005",
    )


def test_function_with_its_own_backward_called_from_a_loop_is_not_evaluation(lint):
    assert not lint(
        """
        def train_baseline(model, optimizer, loader):
            for batch in loader:
                loss = model(**batch).loss
                model.backward(loss)
                model.step()

        for stage in (1, 2, 3):
            for x, y in warmup_loader:
                optimizer.zero_grad()
                criterion(net(x), y).backward()
                optimizer.step()
                train_baseline(model, optimizer, loader)
        """,
        "TL005",
    )


def test_training_script_with_eval_elsewhere_is_not_an_inference_script(lint):
    check(
        lint,
        """
        import timm

        class Probe:
            def run(self):
                self.head.eval()

        net = timm.create_model("resnet18")
        for x, y in loader:
            opt.zero_grad()
            net(x).sum().backward()
            opt.step()
        for inputs, labels in dataloaders["val"]:
            preds = net(inputs)  # expect: TL005
        """,
        "TL005",
    )


def test_predict_method_relying_on_fit_ending_in_eval_mode_is_silent(lint):
    assert not lint(
        """
        import torch

        class NeuralClassifier:
            def fit(self, X, y):
                self.model.train()
                for xb, yb in self.batches(X, y):
                    self.opt.zero_grad()
                    self.loss(self.model(xb), yb).backward()
                    self.opt.step()
                self.model.eval()
                return self

            def predict(self, X):
                with torch.no_grad():
                    return self.model(X).argmax(1)
        """,
        "TL005",
    )


def test_imported_helper_that_switches_to_eval_is_trusted(lint):
    assert not lint(
        """
        import torch
        from utils.modes import set_eval_mode

        for epoch in range(3):
            model.train()
            for x, y in train_loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
            set_eval_mode(model)
            with torch.no_grad():
                for x, y in val_loader:
                    model(x)
        """,
        "TL005",
    )


# ----- family 1: smoke tests and shape probes are not evaluation ------------------------------------


def test_shape_probes_and_fresh_untrained_models_are_not_evaluation(lint):
    source = """
        import torch
        import torch.nn as nn

        class ResNet18(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(nn.Conv2d(3, 64, 3), nn.BatchNorm2d(64), nn.ReLU())

            def forward(self, x):
                return self.body(x)

        def test():
            net = ResNet18()
            y = net(torch.randn(2, 3, 32, 32))
            print(y.size())

        def infer_flat_size(backbone, image_size):
            return backbone(torch.zeros(1, 3, *image_size) * 0.5).flatten(1).shape[1]

        def predict_untrained(batch):
            fresh = ResNet18()
            return fresh(batch)
        """
    assert lint(source, "TL005") == [] and lint(source, "TL006") == []


def test_a_model_trained_here_and_evaluated_on_data_is_evaluation(lint):
    check(
        lint,
        """
        import torch
        import torch.nn as nn

        def test(net, loader):
            with torch.no_grad():
                return [net(x) for x, _ in loader]  # expect: TL005

        net = nn.Sequential(nn.Linear(10, 10), nn.Dropout(0.5), nn.Linear(10, 2))
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        for epoch in range(3):
            for x, y in train_loader:
                optimizer.zero_grad()
                nn.functional.cross_entropy(net(x), y).backward()
                optimizer.step()
            test(net, val_loader)
        """,
        "TL005",
    )


# ----- family 2: models whose loader manages the mode ----------------------------------------------


def test_from_pretrained_and_hub_models_in_predict_are_silent(lint):
    source = """
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained("distilbert-base-uncased-finetuned-sst-2-english")
        classifier = AutoModelForSequenceClassification.from_pretrained("distilbert-base-uncased-finetuned-sst-2-english")
        detector = torch.hub.load("ultralytics/yolov5", "yolov5s")

        @torch.no_grad()
        def predict(text):
            return classifier(**tokenizer(text, return_tensors="pt")).logits.argmax(-1)

        def predict_boxes(images):
            return detector(images).xyxy

        for step, batch in enumerate(aux_loader):
            aux_optimizer.zero_grad()
            aux_model(batch).mean().backward()
            aux_optimizer.step()
        """
    assert lint(source, "TL005") == []
    assert lint(source, "TL006") == []


def test_from_pretrained_model_fine_tuned_here_is_in_training_mode(lint):
    check(
        lint,
        """
        import torch
        from transformers import BertForSequenceClassification

        model = BertForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
        optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
        model.train()
        for batch in train_loader:
            optimizer.zero_grad()
            model(**batch).loss.backward()
            optimizer.step()

        @torch.no_grad()
        def predict(batch):
            return model(**batch).logits.argmax(-1)  # expect: TL005

        print(predict(next(iter(test_loader))))
        """,
        "TL005",
    )


# ----- a model loaded in eval mode stays so until a `.train()` runs -------------------------------------

_SCORE_THEN_FINETUNE = """
    import torch
    from transformers import BertForSequenceClassification

    def score_heads(model, eval_loader):
        scores = torch.zeros(12, 12)
        for ids, mask, labels in eval_loader:
            out = model(ids, attention_mask=mask, labels=labels){marker}
            out.loss.backward()
            scores += model.head_mask_grad().abs().detach()
        return scores

    def finetune(model, loader, optimizer):
        model.train()
        for ids, mask, labels in loader:
            model(ids, attention_mask=mask, labels=labels).loss.backward()
            optimizer.step()
            optimizer.zero_grad()

    def main(train_loader, dev_loader, path):
        model = BertForSequenceClassification.from_pretrained(path, num_labels=2)
        if torch.cuda.is_available():
            model.cuda()
        {between}
        scores = score_heads(model, dev_loader)
        finetune(model, train_loader, torch.optim.AdamW(model.parameters()))
        {after}
"""


def test_model_scored_right_after_from_pretrained_is_not_reported(lint):
    """`from_pretrained` returns the model in eval mode; the program's `.train()` runs only
    after the scoring, so it does not reach it."""
    check(lint, _SCORE_THEN_FINETUNE.format(marker="", between="torch.manual_seed(0)", after="return scores"), "TL005")


def test_model_scored_after_a_train_switch_or_again_after_training_is_reported(lint):
    """A `.train()` (here inside a helper) between the load and the scoring reaches it; so does
    the training before a second scoring call."""
    findings = check(
        lint,
        _SCORE_THEN_FINETUNE.format(
            marker="  # expect: TL005", between="finetune(model, train_loader, None)", after="return scores"
        ),
        "TL005",
    )
    assert "called at line 25" in findings[0].message
    findings = check(
        lint,
        _SCORE_THEN_FINETUNE.format(
            marker="  # expect: TL005", between="pass", after="return score_heads(model, dev_loader)"
        ),
        "TL005",
    )
    assert "called at line 27" in findings[0].message


def test_inline_evaluation_right_after_from_pretrained_in_a_training_script_is_not_reported(lint):
    """The load, then an evaluation loop in the same block: the training that follows (and its
    `.train()`) runs later. A `def` written in between runs only when called: it does not count."""
    source = """
        import torch
        from transformers import BertForSequenceClassification

        model = BertForSequenceClassification.from_pretrained("bert-base-uncased")
        correct = 0
        for batch in val_loader:
            with torch.no_grad():
                correct += (model(**batch).logits.argmax(-1) == batch["labels"]).sum().item()
        model.train()
        for batch in train_loader:
            model(**batch).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        """
    check(lint, source, "TL005")
    check(
        lint,
        """
        import torch
        from transformers import BertForSequenceClassification

        model = BertForSequenceClassification.from_pretrained("bert-base-uncased")

        @torch.no_grad()
        def dev_accuracy(loader):
            return sum((model(**b).logits.argmax(-1) == b["labels"]).sum().item() for b in loader)  # expect: TL005

        model.train()
        for batch in train_loader:
            model(**batch).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        print(dev_accuracy(val_loader))
        """,
        "TL005",
    )


# ----- miss: one function for both phases -------------------------------------------------------------

_PHASES = """
    import contextlib
    import torch
    import torch.nn as nn

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(64, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.3))
            self.head = nn.Linear(64, 10)

        def forward(self, x):
            return self.head(self.body(x))

    def run_epoch(model, loader, optimizer, mode):
        total = 0.0
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)  # expect: TL005, TL006
            if mode == "train":
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            total += loss.item()
        return total / len(loader)

    def _run_batch(model, batch, optimizer, train: bool = True):
        model.train() if train else model.eval()
        grad = contextlib.nullcontext() if train else torch.no_grad()
        logits = model(batch[0])  # expect: TL006
        loss = nn.functional.cross_entropy(logits, batch[1])
        if train:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return loss.item()

    def run_phase(model, loader, optimizer=None):
        model.train(optimizer is not None)
        with torch.set_grad_enabled(optimizer is not None):
            for x, y in loader:
                loss = nn.functional.cross_entropy(model(x), y)
                if optimizer is not None:
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()

    model = Classifier()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(10):
        run_epoch(model, train_loader, optimizer, "train")
        run_epoch(model, val_loader, None, "val")
        for batch in train_loader:
            _run_batch(model, batch, optimizer)
        for batch in val_loader:
            _run_batch(model, batch, optimizer, train=False)
        run_phase(model, train_loader, optimizer)
        run_phase(model, val_loader)
    """


def test_evaluation_path_of_a_function_for_both_phases(lint):
    findings = check(lint, _PHASES, "TL005")
    assert "the evaluation phase of `run_epoch()` (`mode='val'`, called at line" in findings[0].message
    findings += check(lint, _PHASES, "TL006")
    assert "`with torch.set_grad_enabled(...)` on `mode`" in findings[-2].message
    # No fix: `model.eval()` at the top, or `@torch.no_grad()`, would hit the training path too.
    assert all(f.fix is None for f in findings)


def test_model_without_dropout_or_batch_norm_is_the_same_in_both_modes(lint):
    # The evaluation phase lacks eval(), but nothing in this model depends on the mode: TL005 keeps
    # quiet (TL006 still applies: autograd is on).
    source = _PHASES.replace(
        "nn.Sequential(nn.Linear(64, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.3))",
        "nn.Sequential(nn.Linear(64, 64), nn.LayerNorm(64), nn.ReLU())",
    )
    assert lint(source, "TL005") == []
    assert_marked(lint(source, "TL006"), _PHASES, ("TL006",))


# A model's mode dependence is computed from what it is built of, wherever it was built: in a loop
# and kept in a list the evaluation iterates, with a layer chosen by a condition, or a class whose
# forward builds a distribution (no layer). Twins with a dropout layer stay reported.
_ENSEMBLE = """
    import torch
    import torch.nn as nn

    models = list()
    criterion = torch.nn.MSELoss()
    for mod in range(10):
        model = nn.Sequential(
            nn.Linear(1, 100),
            nn.ReLU() if mod < 5 else nn.Tanh(),
            nn.Linear(100, 1),
        )
        models.append(model)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        for t in range(1000):
            loss = criterion(model(X), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

    relu_models = models[:5]
    tanh_models = models[5:]


    def dense_prediction(models, zoom):
        outputs = []
        for model in models:
            with torch.no_grad():
                outputs.append(model(X_test))  # expect: TL005
        return outputs


    dense_prediction(relu_models, 1)
    dense_prediction(tanh_models, 10)
    """

_ACTOR_CRITIC = """
    import torch
    from torch import nn
    from torch.distributions import Categorical


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(4, 32, 8, stride=4)
            self.lin = nn.Linear(512, 4)
            self.value = nn.Linear(512, 1)
            self.activation = nn.ReLU()

        def forward(self, obs):
            h = self.activation(self.conv(obs)).flatten(1)
            pi = Categorical(logits=self.lin(h))
            return pi, self.value(h).reshape(-1)


    class Trainer:
        def __init__(self, env):
            self.env = env
            self.model = Model()
            self.optimizer = torch.optim.Adam(self.model.parameters(), lr=2.5e-4)

        def sample(self):
            with torch.no_grad():
                for t in range(128):
                    pi, v = self.model(torch.as_tensor(self.env.obs))  # expect: TL005
                    self.env.step(pi.sample())

        def train(self, samples):
            pi, value = self.model(samples["obs"])
            loss = -pi.log_prob(samples["actions"]).mean() + value.pow(2).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

        def run(self):
            for update in range(1000):
                self.train(self.sample())
    """


def test_models_kept_in_a_list_are_judged_by_what_they_are_built_of(lint):
    assert lint(_ENSEMBLE, "TL005") == []
    with_dropout = _ENSEMBLE.replace("nn.ReLU() if mod < 5", "nn.Dropout(0.2) if mod < 5")
    findings = check(lint, with_dropout, "TL005")
    assert "`dense_prediction()`, called at line 33" in findings[0].message


def test_layers_unpacked_from_a_list_into_sequential_are_followed(lint):
    source = _ENSEMBLE.replace(
        "model = nn.Sequential(\n",
        "layers = [nn.Linear(1, 100)]\n        layers += [nn.ReLU()]\n        model = nn.Sequential(\n            *layers,\n",
    )
    assert lint(source, "TL005") == []
    assert len(lint(source.replace("[nn.ReLU()]", "[nn.ReLU(), nn.Dropout(0.1)]"), "TL005")) == 1


def test_a_distribution_built_in_forward_is_no_layer(lint):
    assert lint(_ACTOR_CRITIC, "TL005") == []
    with_dropout = _ACTOR_CRITIC.replace(
        "self.activation = nn.ReLU()", "self.activation = nn.Sequential(nn.ReLU(), nn.Dropout(0.1))"
    )
    check(lint, with_dropout, "TL005")
    # A class from elsewhere built in forward may be a layer, or not: unknown, so silent.
    unknown = _ACTOR_CRITIC.replace("from torch.distributions import Categorical", "from policies import Categorical")
    assert lint(unknown, "TL005") == []


# ----- only a model shown to depend on the mode is reported --------------------------------------------
_EVAL_AFTER_TRAINING = """
    import torch
    import torchvision
    import timm
    from torch import nn
    from transformers import BertForSequenceClassification, LlamaForCausalLM

    BUILD

    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(10):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        with torch.no_grad():
            for x, y in val_loader:
                print(model(x).argmax(1))
    """


@pytest.mark.parametrize(
    "build",
    [
        "model = nn.Sequential(nn.Linear(5, 64), nn.ReLU(), nn.Linear(64, 1))",
        "model = nn.LSTM(32, 64, 2)  # dropout 0 by default",
        "model = nn.RNN(32, 64, 2, 'tanh', True, False, 0.0)",
        "model = nn.GRU(32, 64, num_layers=2, dropout=0)",
        "model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.InstanceNorm2d(8), nn.LayerNorm(8), nn.GroupNorm(2, 8))",
        "model = nn.Dropout(p=0.0)",
        "model = torchvision.models.vit_b_16()  # LayerNorm, dropout 0.0",
        "model = timm.create_model('vit_small_patch16_224')",
        "model = LlamaForCausalLM.from_pretrained('llama')  # attention dropout 0.0",
        "from mylib import Net\nmodel = Net()  # a class the linter cannot see into",
        "model = build_model(cfg)  # an unknown factory",
        "def linreg(X):\n    return X @ w + b\nmodel = linreg",
        # a dropout rate from a constructor parameter that every caller leaves at zero
        "class Decoder(nn.Module):\n"
        "    def __init__(self, hidden, dropout_p=0.0):\n"
        "        super().__init__()\n"
        "        self.drop = nn.Dropout(dropout_p)\n"
        "        self.gru = nn.GRU(hidden, hidden, 2, dropout=dropout_p)\n"
        "model = Decoder(64)\n"
        "other = Decoder(64, dropout_p=0)",
    ],
)
def test_models_not_shown_to_depend_on_the_mode_are_silent(lint, build):
    source = _EVAL_AFTER_TRAINING.replace("BUILD", build.replace("\n", "\n    "))
    assert lint(source, "TL005") == []


@pytest.mark.parametrize(
    "build",
    [
        "model = nn.Sequential(nn.Linear(5, 64), nn.Dropout(0.2), nn.Linear(64, 1))",
        "model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))",
        "model = nn.LSTM(32, 64, 2, dropout=0.3)",
        "model = nn.GRU(32, 64, 2, True, False, 0.5)",
        "model = nn.TransformerEncoder(nn.TransformerEncoderLayer(64, 4), 2)  # dropout 0.1 by default",
        "model = nn.InstanceNorm2d(8, track_running_stats=True)",
        "model = torchvision.models.resnet18(num_classes=10)",
        "model = torchvision.models.detection.fasterrcnn_resnet50_fpn()",
        "model = timm.create_model('resnet50', pretrained=True)",
        "model = timm.create_model('vit_small_patch16_224', drop_path_rate=0.1)",
        "model = BertForSequenceClassification.from_pretrained('bert-base-uncased')",
        # a class of the file whose base builds the dropout, through a helper building its layers
        "class Base(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.features = make_layers([64, 'M', 128])\n"
        "def make_layers(cfg):\n"
        "    layers = [nn.Conv2d(3, 64, 3), nn.BatchNorm2d(64)]\n"
        "    return nn.Sequential(*layers)\n"
        "class Net(Base):\n"
        "    pass\n"
        "model = Net()",
        # a class of an unknown base that builds a dropout itself; a forward reading `self.training`
        "from mylib import Backbone\n"
        "class Head(Backbone):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.drop = nn.Dropout(0.1)\n"
        "model = Head()",
        "class Noisy(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x + torch.randn_like(x) if self.training else x\n"
        "model = Noisy()",
        # a factory of the file that returns one
        "def build(arch):\n"
        "    if arch == 'resnet':\n"
        "        return torchvision.models.resnet50()\n"
        "    return nn.Linear(4, 4)\n"
        "model = build(args.arch)",
        # a dropout rate from a constructor parameter that a caller gives a non-zero value
        "class Decoder(nn.Module):\n"
        "    def __init__(self, hidden, n_layers=1, dropout_p=0.0):\n"
        "        super().__init__()\n"
        "        self.gru = nn.GRU(hidden, hidden, n_layers, dropout=dropout_p)\n"
        "dropout_p = 0.05\n"
        "model = Decoder(64, 2, dropout_p=dropout_p)",
    ],
)
def test_models_shown_to_depend_on_the_mode_are_reported(lint, build):
    source = _EVAL_AFTER_TRAINING.replace("BUILD", build.replace("\n", "\n    "))
    findings = lint(source, "TL005")
    assert [f.message.split(" evaluates")[0] for f in findings] == ["`model(...)`"], build


# ----- a function redefined between experiments; an evaluation running several models ---------------
_NOTEBOOK_EXPERIMENTS = """
import torch
from torch import nn

def training_loop(model, optimizer, train_loader):
    for imgs, labels in train_loader:
        loss = nn.functional.cross_entropy(model(imgs), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

def validate(model, val_loader):
    with torch.no_grad():
        for imgs, labels in val_loader:
            print(model(imgs).argmax(1))FIRST

model = nn.Sequential(nn.Flatten(), nn.Linear(3072, 2))
training_loop(model, torch.optim.SGD(model.parameters(), lr=0.01), train_loader)
validate(model, val_loader)

def validate(model, val_loader):
    correct = 0
    with torch.no_grad():
        for imgs, labels in val_loader:
            correct += (model(imgs).argmax(1) == labels).sum()SECOND
    return correct

model = nn.Sequential(nn.Flatten(), nn.Linear(3072, 2))
training_loop(model, torch.optim.SGD(model.parameters(), lr=0.01), train_loader)
validate(model, val_loader)
model = DROPOUT_MODEL
training_loop(model, torch.optim.SGD(model.parameters(), lr=0.01), train_loader)
validate(model, val_loader)
"""


def test_a_redefined_function_is_judged_on_the_calls_that_run_it(lint):
    """Each `def` rebinds the name: the calls below the second `validate` run the second one, one
    of them with a dropout model; the first is called only with a Linear model."""
    source = _NOTEBOOK_EXPERIMENTS.replace("FIRST", "").replace("SECOND", "  # expect: TL005")
    source = source.replace("DROPOUT_MODEL", "nn.Sequential(nn.Flatten(), nn.Dropout(0.4), nn.Linear(3072, 2))")
    findings = check(lint, source, "TL005")
    assert "`validate()`" in findings[0].message


def test_a_redefined_function_never_given_a_mode_dependent_model_is_silent(lint):
    source = _NOTEBOOK_EXPERIMENTS.replace("FIRST", "").replace("SECOND", "")
    source = source.replace("DROPOUT_MODEL", "nn.Sequential(nn.Flatten(), nn.Linear(3072, 2))")
    assert lint(source, "TL005") == []


_SEQ2SEQ = """
import torch
from torch import nn

class Encoder(nn.Module):
    def __init__(self, vocab, hidden, n_layers=1):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.gru = nn.GRU(hidden, hidden, n_layers)

    def forward(self, x, h):
        return self.gru(self.embedding(x), h)

class Decoder(nn.Module):
    def __init__(self, hidden, vocab, n_layers=1, dropout_p=0.1):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.gru = nn.GRU(hidden, hidden, n_layers, dropout=dropout_p)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, x, h):
        y, h = self.gru(self.embedding(x), h)
        return self.out(y), h

encoder = Encoder(1000, 256, 2)
decoder = Decoder(256, 1000, 2, dropout_p=DROPOUT)
encoder_opt = torch.optim.SGD(encoder.parameters(), lr=0.01)
decoder_opt = torch.optim.SGD(decoder.parameters(), lr=0.01)

for src, tgt in pairs:
    encoder_opt.zero_grad()
    decoder_opt.zero_grad()
    _, h = encoder(src, None)
    out, _ = decoder(tgt, h)
    loss = nn.functional.cross_entropy(out.flatten(0, 1), tgt.flatten())
    loss.backward()
    encoder_opt.step()
    decoder_opt.step()

def evaluate(sentence, max_length=10):SWITCH
    _, h = encoder(sentence, None)  # MARK
    token = torch.zeros(1, 1, dtype=torch.long)
    words = []
    for _ in range(max_length):
        out, h = decoder(token, h)
        token = out.argmax(-1)
        words.append(token.item())
    return words

print(evaluate(test_sentence))
"""


def test_an_evaluation_is_mode_dependent_through_any_model_it_runs(lint):
    """The encoder has no mode-dependent layer, the decoder a dropout GRU: the evaluation is reported
    where it starts, naming the decoder."""
    source = _SEQ2SEQ.replace("DROPOUT", "0.05").replace("SWITCH", "").replace("# MARK", "# expect: TL005")
    findings = check(lint, source, "TL005")
    decoder_line = next(i for i, text in enumerate(source.splitlines(), 1) if "out, h = decoder(token, h)" in text)
    assert findings[0].message.startswith(f"`decoder(...)` (line {decoder_line}) evaluates in training mode")


@pytest.mark.parametrize(
    ("dropout", "switch"),
    [("0.0", ""), ("0.05", "\n    decoder.eval()")],
    ids=["no-model-with-mode-layers", "the-mode-dependent-model-switched"],
)
def test_an_evaluation_whose_mode_dependent_models_are_in_eval_mode_is_silent(lint, dropout, switch):
    source = _SEQ2SEQ.replace("DROPOUT", dropout).replace("SWITCH", switch).replace("  # MARK", "")
    assert lint(source, "TL005") == []


# ----- recurrent dropout acts between stacked layers only ---------------------------------------------
_CHAR_DECODER = """
import torch
import torch.nn as nn

LAYERS = {layers}

class CharDecoder(nn.Module):
    def __init__(self, vocab, hidden, n_layers=1, drop=0.2):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.rnn = nn.LSTM(hidden, hidden, n_layers, dropout=drop)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens, state=None):
        out, state = self.rnn(self.embed(tokens), state)
        return self.head(out), state

decoder = CharDecoder(128, 256, LAYERS)
optimizer = torch.optim.Adam(decoder.parameters())

def validate():
    with torch.no_grad():
        for tokens, targets in val_loader:
            logits, _ = decoder(tokens){marker}
            print(nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten()).item())

for epoch in range(10):
    for tokens, targets in loader:
        optimizer.zero_grad()
        logits, _ = decoder(tokens)
        nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten()).backward()
        optimizer.step()
    validate()
"""


def test_stacked_recurrent_dropout_evaluated_in_training_mode(lint):
    (finding,) = check(lint, _CHAR_DECODER.format(layers=2, marker="  # expect: TL005"), "TL005")
    assert "`decoder(...)` evaluates in training mode" in finding.message


def test_single_layer_recurrent_dropout_is_inert(lint):
    # PyTorch applies an LSTM's dropout between stacked layers only; with one layer it does nothing.
    check(lint, _CHAR_DECODER.format(layers=1, marker=""), "TL005")


def test_dropout_of_rate_zero_is_inert(lint):
    source = _CHAR_DECODER.format(layers=1, marker="").replace(
        "self.head = nn.Linear(hidden, vocab)", "self.head = nn.Sequential(nn.Dropout(0.0), nn.Linear(hidden, vocab))"
    )
    check(lint, source, "TL005")


# ----- a model loaded in eval mode, handed through helpers -----------------------------------------

_HEAD_SCORING = """
import torch
from transformers import GPT2LMHeadModel

def score_heads(model, eval_loader, head_mask):
    head_mask.requires_grad_(True)
    total = 0.0
    for batch in eval_loader:
        loss = model(batch, labels=batch, head_mask=head_mask).loss  {marker}
        loss.backward()
        total += loss.item()
    return head_mask.grad.abs(), total

def prune(model, eval_loader, n_layers, n_heads):
    mask = torch.ones(n_layers, n_heads)
    importance, loss = score_heads(model, eval_loader, mask)
    {extra}
    return importance

model = GPT2LMHeadModel.from_pretrained("gpt2")
model.to("cuda")
if torch.cuda.device_count() > 1:
    model = torch.nn.DataParallel(model)
prune(model, eval_loader, 12, 12)
"""


def test_model_from_an_eval_mode_loader_handed_through_helpers_is_silent(lint):
    # `from_pretrained` returns the model in eval mode; nothing here switches it back.
    check(lint, _HEAD_SCORING.format(marker="", extra="pass"), "TL005")


def test_model_from_an_eval_mode_loader_switched_to_train_is_reported(lint):
    # The second pruning scores the heads after the first one's `.train()`.
    source = (
        _HEAD_SCORING.format(marker="# expect: TL005", extra="model.train()") + "prune(model, eval_loader, 12, 12)\n"
    )
    (finding,) = check(lint, source, "TL005")
    assert "evaluates in training mode" in finding.message


def test_model_from_an_eval_mode_loader_switched_to_train_only_after_the_scoring_is_silent(lint):
    # The `.train()` runs after the only scoring: it cannot reach it.
    check(lint, _HEAD_SCORING.format(marker="", extra="model.train()"), "TL005")


def test_model_from_an_eval_mode_loader_handed_to_a_library_trainer_is_reported(lint):
    source = _HEAD_SCORING.format(marker="# expect: TL005", extra="pass").replace(
        "prune(model, eval_loader, 12, 12)",
        "Trainer(model=model, train_dataset=data).train()\nprune(model, eval_loader, 12, 12)",
    )
    check(lint, source, "TL005")


# ----- dropout gated by a forward argument ---------------------------------------------------------

_GATED_TAGGER = """
import torch
import torch.nn as nn

class SpanTagger(nn.Module):
    def __init__(self, vocab, dim, tags):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, tags)
        self.drop = nn.Dropout(0.25)

    def forward(self, tokens, noisy={default}):
        h = torch.tanh(self.proj(self.embed(tokens)))
        {gate}
            h = self.drop(h)
        return self.out(h)

tagger = SpanTagger(5000, 64, 9)
opt = torch.optim.SGD(tagger.parameters(), lr=0.1)
for tokens, tags in train_batches:
    opt.zero_grad()
    nn.functional.cross_entropy(tagger(tokens, noisy=True), tags).backward()
    opt.step()

hits = 0
for tokens, tags in dev_batches:
    hits += (tagger({eval_args}).argmax(-1) == tags).sum().item(){marker}
print(hits)
"""


def _tagger(default="False", gate="if noisy:", eval_args="tokens", marker=""):
    return _GATED_TAGGER.format(default=default, gate=gate, eval_args=eval_args, marker=marker)


def test_dropout_gated_off_by_the_default_of_a_forward_argument_is_silent(lint):
    # Training asks for the noise; evaluation leaves `noisy` at False and never runs the dropout.
    check(lint, _tagger(), "TL005")


def test_dropout_gated_off_by_the_argument_the_evaluation_passes_is_silent(lint):
    check(lint, _tagger(default="True", gate="if noisy and tokens.dim() > 1:", eval_args="tokens, False"), "TL005")


def test_evaluation_passing_the_flag_that_runs_the_dropout_is_reported(lint):
    (finding,) = check(lint, _tagger(eval_args="tokens, noisy=True", marker="  # expect: TL005"), "TL005")
    assert "`tagger(...)` evaluates in training mode" in finding.message


def test_dropout_gated_on_the_default_that_runs_it_is_reported(lint):
    check(lint, _tagger(default="True", marker="  # expect: TL005"), "TL005")


def test_dropout_gated_on_the_module_mode_is_reported(lint):
    # `self.training` is the mode itself: evaluating in training mode runs the dropout.
    check(lint, _tagger(gate="if self.training:", marker="  # expect: TL005"), "TL005")


def test_dropout_gated_by_a_flag_the_evaluation_passes_unknown_is_reported(lint):
    source = _tagger(eval_args="tokens, noisy=args.noisy", marker="  # expect: TL005")
    check(lint, source, "TL005")


def test_dropout_also_run_outside_the_gate_is_reported(lint):
    source = _tagger(marker="  # expect: TL005").replace("return self.out(h)", "return self.out(self.drop(h))")
    check(lint, source, "TL005")


# ----- a method of the class named like a model is no model -----------------------------------------

_SOLVER = """
import torch
import torch.nn as nn

class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(64, 64), nn.Dropout(0.3), nn.Linear(64, 64))

    def forward(self, x):
        return self.body(x)

class Solver:
    def __init__(self, loader, checkpoints):
        self.G = Generator()
        self.optimizer = torch.optim.Adam(self.G.parameters(), lr=1e-4)
        self.loader = loader
        self.checkpoints = checkpoints

    def train(self):
        for x, y in self.loader:
            loss = (self.G(x) - y).pow(2).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

    def restore_model(self, step):
        self.G.load_state_dict(torch.load(f"{{self.checkpoints}}/{{step}}-G.ckpt"))

    def test(self, step):
        self.restore_model(step){switch}
        with torch.no_grad():
            for x, _ in self.loader:
                yield self.G(x){mark}
"""


def test_generator_run_in_training_mode_after_a_restore_method_is_reported_at_the_generator(lint):
    findings = check(lint, _SOLVER.format(switch="", mark="  # expect: TL005"), "TL005")
    assert findings[0].line == 34
    assert "`self.G(...)` evaluates in training mode in `test()`" in findings[0].message


def test_restore_method_named_like_a_model_called_before_eval_is_no_model_call(lint):
    # `self.restore_model(step)` runs before `self.G.eval()` and outside the no-grad block: a method
    # of Solver that loads weights, not a model evaluated in training mode or with autograd on.
    source = _SOLVER.format(switch="\n        self.G.eval()", mark="")
    assert lint(source, "TL005") == []
    assert lint(source, "TL006") == []


# ----- an explicit `.train()` right before the forward asks for training mode ---------------------
def test_forward_right_after_an_explicit_train_is_training_mode_on_purpose(lint):
    check(
        lint,
        """
        import torch

        def validate_fused_norm(reference, fused, batch, training):
            x1 = batch.clone().requires_grad_()
            x2 = batch.clone().requires_grad_()
            if training:
                reference.train()
                fused.train()
                y1 = reference(x1)
                y2 = fused(x2)
            else:
                reference.eval()
                fused.eval()
                with torch.no_grad():
                    y1 = reference(x1)
                    y2 = fused(x2)
            print("max difference", (y1 - y2).abs().max().item())
            if training:
                y1.pow(2).sum().backward()
                y2.pow(2).sum().backward()

        net = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8))
        fused = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8))
        validate_fused_norm(net, fused, torch.randn(16, 8), training=True)
        """,
        "TL005",
    )


def test_train_switch_followed_by_training_then_validation_is_reported(lint):
    findings = check(
        lint,
        """
        import torch

        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.3), torch.nn.Linear(8, 2))
        for epoch in range(10):
            model.train()
            train_one_epoch(model, train_loader, optimizer)
            with torch.no_grad():
                for x, y in val_loader:
                    val_loss = torch.nn.functional.cross_entropy(model(x), y)  # expect: TL005

        def run_epoch(net, loader, val_loader, opt):
            net.train()
            for x, y in loader:
                opt.zero_grad()
                torch.nn.functional.cross_entropy(net(x), y).backward()
                opt.step()
            for x, y in val_loader:
                print(net(x).argmax(1).eq(y).float().mean())  # expect: TL005

        run_epoch(model, train_loader, val_loader, optimizer)
        """,
        "TL005",
    )
    assert findings[0].message.startswith("`model(...)` evaluates in training mode in the evaluation loop")


# ----- layers built only under a constructor argument ------------------------------------------------

_CONFIGURED_CRITIC = """
import torch
import torch.nn as nn

def make_norm(kind, channels):
    if kind == "group":
        return nn.GroupNorm(8, channels)
    if kind == "layer":
        return nn.GroupNorm(1, channels)
    return nn.BatchNorm2d(channels)

class Block(nn.Module):
    def __init__(self, cin, cout, resample=None, norm="group"):
        super().__init__()
        if resample == "down":
            self.norm = make_norm(norm, cin)
            self.conv = nn.Conv2d(cin, cout, 3, stride=2, padding=1)
        elif resample == "up":
            self.norm = nn.BatchNorm2d(cin)
            self.conv = nn.ConvTranspose2d(cin, cout, 4, stride=2, padding=1)
        else:
            raise ValueError(resample)

    def forward(self, x):
        return self.conv(torch.relu(self.norm(x)))

class Stage(nn.Module):
    def __init__(self, cin, cout, resample):
        super().__init__()
        self.first = Block(cin, cout, resample=resample, norm={norm})
        self.second = Block(cout, cout, resample)

    def forward(self, x):
        return self.second(self.first(x))

class Critic(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1)
        self.body = Stage(width, 2 * width, {resample})
        self.head = nn.Linear(2 * width, 1)

    def forward(self, x):
        return self.head(self.body(self.stem(x)).mean((2, 3)))

critic = Critic(32)
opt = torch.optim.Adam(critic.parameters(), lr=1e-4)
for images, labels in train_batches:
    opt.zero_grad()
    nn.functional.binary_cross_entropy_with_logits(critic(images).squeeze(1), labels).backward()
    opt.step()

hits = 0
for images, labels in dev_batches:
    hits += ((critic(images).squeeze(1) > 0) == labels).sum().item(){marker}
print(hits)
"""


def _critic(resample='"down"', norm='"group"', marker=""):
    return _CONFIGURED_CRITIC.format(resample=resample, norm=norm, marker=marker)


@pytest.mark.parametrize("norm", ['"group"', '"layer"'])
def test_batch_norm_only_in_constructor_branches_the_model_never_selects_is_silent(lint, norm):
    # The critic builds its blocks with resample="down" (through `Stage`), whose branch takes its norm
    # from a factory asked for a group norm: the BatchNorm2d of the "up" branch and the factory's
    # fallback are never built.
    check(lint, _critic(norm=norm), "TL005")


def test_batch_norm_of_the_constructor_branch_the_model_selects_is_reported(lint):
    source = _critic(resample='"up"', marker="  # expect: TL005")
    (finding,) = check(lint, source, "TL005")
    assert source.splitlines()[finding.line - 1].lstrip().startswith("hits += ((critic(images)")
    assert finding.message.startswith("`critic(...)` evaluates in training mode in the evaluation loop at line")


def test_batch_norm_of_the_factory_fallback_the_model_selects_is_reported(lint):
    check(lint, _critic(norm='"batch"', marker="  # expect: TL005"), "TL005")


def test_batch_norm_under_a_constructor_argument_the_file_does_not_show_is_reported(lint):
    check(lint, _critic(resample="args.resample", marker="  # expect: TL005"), "TL005")
