"""TL006 eval-without-no-grad: positives and hard negatives shaped like real training scripts."""

from expect_markers import check


# ----- positives ---------------------------------------------------------------------------------
def test_validate_with_eval_but_no_no_grad(lint):
    findings = check(
        lint,
        """
        import torch

        def validate(model, val_loader, criterion, device):
            model.eval()
            running = 0.0
            for images, target in val_loader:
                output = model(images.to(device))  # expect: TL006
                running += criterion(output, target.to(device)).item()
            return running / len(val_loader)
        """,
        "TL006",
    )
    message = findings[0].message
    assert "`validate()`" in message and "autograd on" in message
    assert "decorate `validate` with `@torch.no_grad()`" in message
    assert findings[0].severity == "warning" and findings[0].name == "eval-without-no-grad"


def test_inline_validation_loop_without_no_grad(lint):
    findings = check(
        lint,
        """
        for epoch in range(epochs):
            model.train()
            for x, y in train_loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
            model.eval()
            val_loss = 0.0
            for x, y in val_loader:
                val_loss += criterion(model(x), y)  # expect: TL006
            model.train()
        """,
        "TL006",
    )
    assert "wrap the evaluation loop in `with torch.no_grad():`" in findings[0].message


def test_helper_called_outside_no_grad_from_epoch_loop(lint):
    findings = check(
        lint,
        """
        import torch

        def evaluate(model, loader):
            correct = 0
            for x, y in loader:
                correct += (model(x).argmax(1) == y).sum()  # expect: TL006
            return correct

        for epoch in range(epochs):
            model.train()
            for x, y in train_loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
            model.eval()
            acc = evaluate(model, val_loader)
        """,
        "TL006",
    )
    assert "called at line 17 outside any no-grad block" in findings[0].message


def test_no_grad_closed_before_the_model_call(lint):
    check(
        lint,
        """
        import torch

        @torch.no_grad()
        def prepare(batch):
            return batch.float()

        def predict(loader):
            model.eval()
            with torch.no_grad():
                batches = [prepare(b) for b in loader]
            for b in batches:
                yield model(b)  # expect: TL006

        for out in predict(test_loader):
            print(out)
        """,
        "TL006",
    )


def test_enable_grad_around_the_evaluation_overrides_outer_no_grad(lint):
    check(
        lint,
        """
        import torch

        def test(model, loader):
            model.eval()
            predictions = []
            with torch.set_grad_enabled(True):
                for x, _ in loader:
                    logits = model(x)  # expect: TL006
                    predictions.append(logits.argmax(1))
            return predictions

        for epoch in range(3):
            model.train()
            for x, y in train_loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
            with torch.no_grad():
                test(model, test_loader)
        """,
        "TL006",
    )


# ----- hard negatives ------------------------------------------------------------------------------
def test_inference_mode_decorator_and_no_grad_block_are_silent(lint):
    assert not lint(
        """
        import torch

        @torch.inference_mode()
        def evaluate(model, loader):
            model.eval()
            return [model(x) for x, _ in loader]

        def validate(model, loader):
            model.eval()
            with torch.no_grad():
                for x, _ in loader:
                    model(x)
        """,
        "TL006",
    )


def test_validate_called_inside_no_grad_after_eval_is_silent(lint):
    assert not lint(
        """
        import torch

        def validate(model, loader):
            return [model(x).argmax(1) for x, _ in loader]

        for epoch in range(10):
            model.train()
            for x, y in train_loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
            model.eval()
            with torch.no_grad():
                preds = validate(model, val_loader)
        """,
        "TL006",
    )


def test_saliency_and_adversarial_evaluation_need_gradients(lint):
    assert not lint(
        """
        import torch

        def evaluate_saliency(model, loader):
            model.eval()
            maps = []
            for x, y in loader:
                x.requires_grad_(True)
                score = model(x).gather(1, y[:, None]).sum()
                score.backward()
                maps.append(x.grad.abs())
            return maps

        def test_robustness(model, loader, eps):
            model.eval()
            for x, y in loader:
                x = x.clone().requires_grad_(True)
                loss = torch.nn.functional.cross_entropy(model(x), y)
                grad, = torch.autograd.grad(loss, x)
                adv = x + eps * grad.sign()
        """,
        "TL006",
    )


def test_set_grad_enabled_false_statement_and_global_switch_are_silent(lint):
    assert not lint(
        """
        import torch

        torch.set_grad_enabled(False)
        model = load_model()
        model.eval()

        def run_inference(images):
            return model(images)

        for batch in test_loader:
            run_inference(batch)
        """,
        "TL006",
    )


def test_lightning_validation_step_and_nanogpt_estimate_loss_are_silent(lint):
    assert not lint(
        """
        import torch
        import pytorch_lightning as pl

        class Lit(pl.LightningModule):
            def validation_step(self, batch, batch_idx):
                x, y = batch
                return self.model(x)

        @torch.no_grad()
        def estimate_loss():
            model.eval()
            for split in ['train', 'val']:
                for k in range(eval_iters):
                    logits, loss = model(*get_batch(split))
            model.train()
        """,
        "TL006",
    )


def test_eval_function_passed_as_callback_is_not_judged(lint):
    assert not lint(
        """
        def make_evaluator(ts_model):
            def eval_wrapper(inputs):
                return ts_model(inputs)
            return run_evaluation(eval_wrapper, data_loader)
        """,
        "TL006",
    )


def test_helper_called_by_a_library_training_function_is_reported(lint):
    # `fit` has no call site in this file, but it trains: nobody can call it under no-grad.
    findings = check(
        lint,
        """
        def train_one_epoch(model, optimizer, loader):
            model.train()
            for x, y in loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()

        def evaluate_top1(model, loader):
            model.eval()
            hits = 0
            for x, y in loader:
                hits += (model(x).argmax(1) == y).sum().item()  # expect: TL006
            return hits

        def fit(model, optimizer, train_loader, val_loader, epochs):
            for epoch in range(epochs):
                train_one_epoch(model, optimizer, train_loader)
                evaluate_top1(model, val_loader)
        """,
        "TL006",
    )
    assert "called at line 19" in findings[0].message


# ----- miss: evaluation without a loop --------------------------------------------------------------

_SAMPLER = """
    import torch
    from torchvision.utils import save_image

    generator = torch.nn.Sequential(torch.nn.Conv2d(3, 64, 4), torch.nn.Dropout(0.5), torch.nn.ConvTranspose2d(64, 3, 4))
    optimizer_G = torch.optim.Adam(generator.parameters(), lr=2e-4)

    def sample_images(batches_done):
        imgs = next(iter(val_dataloader))
        real_A = imgs["B"].type(Tensor)
        fake_B = generator(real_A)  # expect: TL005, TL006
        save_image(torch.cat((real_A.data, fake_B.data), -2), f"images/{batches_done}.png")

    def sample_in_eval_mode(batches_done):
        generator.eval()
        imgs = next(iter(val_dataloader))
        fake_B = generator(imgs["B"].to(device))  # expect: TL006
        save_image(fake_B, f"images/{batches_done}.png")
        generator.train()

    def sample_without_grad(batches_done):
        generator.eval()
        with torch.no_grad():
            fake_B = generator(next(iter(val_dataloader))["B"])
        save_image(fake_B, f"images/{batches_done}.png")
        generator.train()

    def sample_noise(batches_done):
        save_image(generator(torch.randn(16, 3, 256, 256)), f"images/noise_{batches_done}.png")

    for epoch in range(200):
        for i, batch in enumerate(dataloader):
            optimizer_G.zero_grad()
            loss_G = criterion(generator(batch["B"]), batch["A"])
            loss_G.backward()
            optimizer_G.step()
            if i % 500 == 0:
                sample_images(i)
                sample_in_eval_mode(i)
                sample_without_grad(i)
                sample_noise(i)
    """


def test_sampling_helper_on_one_validation_batch_is_evaluation(lint):
    check(lint, _SAMPLER, "TL006")
    check(lint, _SAMPLER, "TL005")


# ----- reached through roles from data flow (issue 9) -----

_CYCLEGAN = """
    import itertools
    import torch
    from torchvision.utils import save_image
    from models import GeneratorResNet

    G_AB = GeneratorResNet((3, 256, 256), 9)
    G_BA = GeneratorResNet((3, 256, 256), 9)
    optimizer_G = torch.optim.Adam(itertools.chain(G_AB.parameters(), G_BA.parameters()), lr=2e-4)

    def sample_images(batches_done):
        imgs = next(iter(val_dataloader))
        fake_B = G_AB(imgs["A"].to(device))  # expect: TL006
        save_image(fake_B, f"images/{batches_done}.png")

    def evaluate(loader):
        return [Enc1(x).argmax(1) for x, _ in loader]  # expect: TL006

    Enc1 = Encoder()
    optimizer_E = torch.optim.SGD(Enc1.parameters(), lr=0.1)
    for epoch in range(200):
        for i, batch in enumerate(dataloader):
            optimizer_G.zero_grad()
            loss_G = criterion(G_AB(batch["A"]), batch["B"]) + criterion(G_BA(batch["B"]), batch["A"])
            loss_G.backward()
            optimizer_G.step()
            if i % 100 == 0:
                sample_images(i)
        evaluate(val_loader)
    """


def test_models_named_by_letters_whose_parameters_feed_an_optimizer(lint):
    check(lint, _CYCLEGAN, "TL006")


def test_objects_named_by_letters_that_nothing_trains_are_not_models(lint):
    assert (
        lint(
            """
            import torch
            from torchvision.utils import save_image
            from colors import Palette, Tokenizer

            P_AB = Palette("viridis")
            Tok1 = Tokenizer("bpe.json")

            def sample_images(batches_done):
                imgs = next(iter(val_dataloader))
                save_image(P_AB(imgs["A"]), f"images/{batches_done}.png")

            def evaluate(loader):
                return [Tok1(text) for text, _ in loader]

            for epoch in range(200):
                for i, batch in enumerate(dataloader):
                    optimizer.zero_grad()
                    criterion(model(batch["A"]), batch["B"]).backward()
                    optimizer.step()
                    if i % 100 == 0:
                        sample_images(i)
                evaluate(val_loader)
            """,
            "TL006",
        )
        == []
    )


# Unit tests and manual checks are told by data and reachability: a helper that only test methods
# call is part of the test; a model run once on a collection of values written in the code (two
# sentences, a literal tensor) is a manual check, not evaluation on data. Twins that reach the
# helper from a script, or feed data the code selects or reads, stay reported.
_DETECTOR_TESTS = """
    import unittest

    import torch
    from maskrcnn_benchmark.modeling.detector import build_detection_model
    from maskrcnn_benchmark.structures.image_list import to_image_list


    def create_model(cfg, device):
        return build_detection_model(cfg).to(device)


    def _test_run_selected_detectors(self, cfg_files, device):
        for cfg_file in cfg_files:
            cfg = load_config(cfg_file)
            model = create_model(cfg, device)
            inputs = to_image_list([torch.rand(3, s, s) for s in cfg.INPUT.MIN_SIZE_TRAIN], cfg.SIZE_DIVISIBILITY)
            model.eval()
            output = model(inputs)  # expect: TL006
            self.assertEqual(len(output), len(inputs.image_sizes))


    class TestDetectors(unittest.TestCase):
        def test_run_selected_detectors(self):
            _test_run_selected_detectors(self, CONFIG_FILES, "cpu")

        def test_run_selected_detectors_cuda(self):
            _test_run_selected_detectors(self, CONFIG_FILES, "cuda")
    """


def test_a_helper_that_only_unit_tests_call_is_part_of_the_test(lint):
    assert lint(_DETECTOR_TESTS, "TL006") == []
    # Reached from a script too: the helper is no longer test code.
    script = (
        _DETECTOR_TESTS
        + "\n    if __name__ == '__main__':\n        _test_run_selected_detectors(None, CONFIG_FILES, 'cpu')\n"
    )
    check(lint, script, "TL006")


_BERT_CHECK = """
    import torch
    from transformers import BertModel, BertTokenizer


    def _test():
        tokenizer = BertTokenizer.from_pretrained("bert-base-uncased")
        model = BertModel.from_pretrained("bert-base-uncased")
        text = ["Replace me by any text you'd like.", "Second sentence"]
        encoded = tokenizer(text, return_tensors="pt", padding=True)
        output = model(input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"])  # expect: TL006
        print(output["last_hidden_state"].shape)


    if __name__ == "__main__":
        _test()
    """


def test_a_pretrained_model_run_once_on_literal_sentences_is_a_manual_check(lint):
    assert lint(_BERT_CHECK, "TL006") == []
    # Sentences read from a file are data: the same call evaluates.
    from_file = _BERT_CHECK.replace(
        'text = ["Replace me by any text you\'d like.", "Second sentence"]',
        'text = open("sentences.txt").read().splitlines()',
    )
    check(lint, from_file, "TL006")
    # A lone constant selects data (`get_batch("val")`, a file name): not a literal input.
    selected = _BERT_CHECK.replace("tokenizer(text,", 'tokenizer(load_split("test"),')
    check(lint, selected, "TL006")


# ----- a forward whose returned loss a caller backpropagates is a training step -------------------------
_SEQ2SEQ = """
    import torch
    from torch import nn

    encoder = nn.Sequential(nn.Embedding(100, 32), nn.Dropout(0.5))
    decoder = nn.Sequential(nn.Linear(32, 32), nn.Dropout(0.5), nn.Linear(32, 100))

    def batch_loss(encoder, decoder, X, Y, loss):
        enc = encoder(X)
        total = torch.tensor([0.0])
        for y in Y.permute(1, 0):
            total = total + loss(decoder(enc.mean(1)), y).sum()
        return total / Y.numel()

    def train(encoder, decoder, data_iter, num_epochs):
        optimizer = torch.optim.Adam([*encoder.parameters(), *decoder.parameters()])
        loss = nn.CrossEntropyLoss(reduction="none")
        for epoch in range(num_epochs):
            for X, Y in data_iter:
                optimizer.zero_grad()
                l = batch_loss(encoder, decoder, X, Y, loss)
                l.backward()
                optimizer.step()
            SCORE

    train(encoder, decoder, data_iter, 50)
    """


def test_a_loss_function_whose_result_is_backpropagated_is_a_training_step(lint):
    source = _SEQ2SEQ.replace("SCORE", "print(epoch)")
    assert lint(source, "TL005", "TL006") == []
    # Unpacked, scaled and reduced on the way to backward: still the training step.
    unpacked = source.replace("return total / Y.numel()", "return total / Y.numel(), enc").replace(
        "l = batch_loss(encoder, decoder, X, Y, loss)", "l, _ = batch_loss(encoder, decoder, X, Y, loss)"
    )
    assert lint(unpacked.replace("l.backward()", "(l.mean() / 2).backward()"), "TL005", "TL006") == []


def test_the_same_loss_function_only_logged_in_the_training_loop_is_evaluation(lint):
    # Its value is only read back as a number: nothing backpropagates it, so it evaluates.
    source = _SEQ2SEQ.replace(
        "l = batch_loss(encoder, decoder, X, Y, loss)\n                l.backward()",
        "l = model_loss(X, Y)\n                l.backward()",
    ).replace("SCORE", "print(sum(batch_loss(encoder, decoder, X, Y, loss).item() for X, Y in dev_iter))")
    source = source.replace(
        "total = total + loss(decoder(enc.mean(1)), y).sum()",
        "total = total + loss(decoder(enc.mean(1)), y).sum()  # expect: TL005, TL006",
    )
    check(lint, source, "TL005")
    check(lint, source, "TL006")


# ----- a method every caller runs under no-grad, through the class hierarchy -------------------------
_EVALUATORS = """
    import torch
    from torch import nn

    class Evaluator:
        def __init__(self, trainer):
            self.model = trainer.model

        def run_all_evals(self, trainer):
            scores = {}
            with torch.no_grad():
                for data_set in ["valid", "test"]:
                    self.evaluate_mt(scores, data_set)
            return scores

    class EncDecEvaluator(Evaluator):
        def evaluate_mt(self, scores, data_set):
            self.model.eval()
            for x, y in self.get_iterator(data_set):
                scores[data_set] = self.model(x).argmax(-1).eq(y).float().mean().item()  # expect: TL006
    """


def test_a_subclass_method_every_caller_runs_under_no_grad_is_silent(lint):
    # `self.evaluate_mt` in the base class runs the subclass's method: its only call site is under no-grad.
    assert lint(_EVALUATORS, "TL006") == []


def test_a_subclass_method_reached_with_autograd_on_is_reported(lint):
    check(lint, _EVALUATORS.replace("with torch.no_grad():", "if True:"), "TL006")
    # Another call site outside any no-grad block: reported at that call.
    direct = _EVALUATORS + "\n    EncDecEvaluator(trainer).evaluate_mt({}, 'valid')\n"
    findings = check(lint, direct, "TL006")
    assert "called at line 22" in findings[0].message


# ----- a model read from a registry is what was stored in it ------------------------------------------
_REGISTRY = """
    import torch
    import torchvision

    models = {}

    def predict(name, image):
        return models[name](image, size=640)  # expect: TL006

    if __name__ == "__main__":
        for m in ["yolov5s", "yolov5m"]:
            models[m] = STORED
    """


def test_a_hub_model_read_from_a_registry_is_the_entry_points_business(lint):
    source = _REGISTRY.replace("STORED", 'torch.hub.load("ultralytics/yolov5", m)')
    assert lint(source, "TL006") == []


def test_a_model_built_here_and_read_from_a_registry_is_judged(lint):
    stored = 'torchvision.models.resnet18().eval()\n            models[m].load_state_dict(torch.load(m + ".pt"))'
    check(lint, _REGISTRY.replace("STORED", stored), "TL006")
    # A registry that also takes entries from elsewhere (`{**defaults}`) is unknown: still reported.
    unknown = _REGISTRY.replace("models = {}", "models = {**defaults}").replace(
        "STORED", 'torch.hub.load("ultralytics/yolov5", m)'
    )
    check(lint, unknown, "TL006")


# ----- a model run before anything trains or loads it is a smoke test -------------------------------
_WARM_UP = """
    import torch

    def evaluate(model, loader, device, size):
        model.eval()
        weight = next(model.parameters())
        model(torch.zeros(2, 3, size, size, device=device).type_as(weight))
        hits = 0
        for images, labels in loader:
            GRAD
            hits += (model(images.to(device)).argmax(1) == labels.to(device)).sum().item()  # expect: TL006
        return hits
    """


def test_a_warm_up_on_a_cast_constant_tensor_is_not_the_evaluation(lint):
    assert lint(_WARM_UP.replace("GRAD", "torch.set_grad_enabled(False)"), "TL006") == []
    findings = check(lint, _WARM_UP.replace("GRAD", "pass"), "TL006")
    assert findings[0].line == 11 and "`evaluate()`" in findings[0].message


_CHECK_BEFORE_TRAINING = """
    import torch
    from torch import nn
    from charset import encode_text

    tagger = nn.Sequential(nn.Embedding(128, 64), nn.Linear(64, 10))

    def show_prediction(text):
        scores = tagger(encode_text(text))  # expect: TL006
        print(text, scores.argmax(-1))

    BEFORE
    optimizer = torch.optim.SGD(tagger.parameters(), lr=0.1)
    for epoch in range(10):
        for x, y in train_loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(tagger(x), y).backward()
            optimizer.step()
        IN_LOOP
    AFTER
    """


def _placed(source: str, before: str = "", in_loop: str = "pass", after: str = "") -> str:
    return source.replace("BEFORE", before).replace("IN_LOOP", in_loop).replace("AFTER", after)


def test_a_model_run_before_any_training_is_not_evaluated_yet(lint):
    assert lint(_placed(_CHECK_BEFORE_TRAINING, before='show_prediction("a quick check")'), "TL006") == []


def test_the_same_run_after_training_or_loading_is_evaluation(lint):
    for placed in (
        _placed(_CHECK_BEFORE_TRAINING, before='show_prediction("first")', after='show_prediction("again")'),
        _placed(_CHECK_BEFORE_TRAINING, in_loop='show_prediction("during")'),
        _placed(_CHECK_BEFORE_TRAINING, before='tagger.load_state_dict(torch.load("tagger.pt")); show_prediction("x")'),
    ):
        findings = check(lint, placed, "TL006")
        assert "`show_prediction()`" in findings[0].message


_FRESH_HEAD = """
    import torch
    from torch import nn

    def test_heads(features, dim=16):
        head = nn.Sequential(nn.Linear(dim, 32), nn.ReLU(), nn.Linear(32, 3))
        print("parameters:", sum(p.numel() for p in head.parameters()))
        LOAD
        logits = head(features)  # expect: TL006
        print(logits.shape, logits.softmax(-1))

    test_heads(dataset.features[:4])
    """


def test_modules_built_in_the_function_and_run_untrained_are_a_smoke_test(lint):
    assert lint(_FRESH_HEAD.replace("LOAD", "pass"), "TL006") == []
    loaded = _FRESH_HEAD.replace("LOAD", 'head.load_state_dict(torch.load("head.pt"))')
    findings = check(lint, loaded, "TL006")
    assert findings[0].line == 9 and "`test_heads()`" in findings[0].message


_SCRIPT_BATCH = """
    import torch

    model = build_model()
    optimizer = torch.optim.Adam(model.parameters())
    for epoch in range(5):
        for images, labels in train_loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(images), labels).backward()
            optimizer.step()

    images, labels = next(iter(LOADER))
    images = images.to(device)
    GRAD
    predicted = model(images).argmax(1)  # expect: TL006
    show_grid(images.cpu(), predicted.cpu(), labels)
    """


def test_a_script_showing_predictions_on_an_unpacked_validation_batch_evaluates(lint):
    findings = check(lint, _SCRIPT_BATCH.replace("LOADER", "val_loader").replace("GRAD", "pass"), "TL006")
    assert findings[0].line == 15 and "the evaluation batch at line 15" in findings[0].message
    off = _SCRIPT_BATCH.replace("LOADER", "val_loader").replace("GRAD", "torch.set_grad_enabled(False)")
    assert lint(off, "TL006") == []
    # A batch of training data is not evaluation data.
    assert lint(_SCRIPT_BATCH.replace("LOADER", "train_loader").replace("GRAD", "pass"), "TL006") == []


# ----- helpers reached through an instance the class holds (`self.checks.method(...)`) -----------------
_HELD_HELPER = """
    import unittest

    import torch
    from mylib import TinyTagger, make_config_and_inputs


    class TaggerChecks:
        def __init__(self, parent, batch_size=2):
            self.parent = parent
            self.batch_size = batch_size

        def check_tag_prediction(self, config, input_ids, labels):
            tagger = TinyTagger(config)
            tagger.to("cpu")
            tagger.eval()
            logits = tagger(input_ids, labels=labels)
            self.parent.assertEqual(logits.shape[0], self.batch_size)


    class TaggerTest(unittest.TestCase):
        def setUp(self):
            self.checks = TaggerChecks(self)

        def test_tag_prediction(self):
            self.checks.check_tag_prediction(*make_config_and_inputs())
    """


def test_a_checker_held_by_a_test_case_is_a_unit_test_helper(lint):
    assert lint(_HELD_HELPER, "TL006") == []


_HELD_PREDICTOR = """
    import torch


    class Predictor:
        def __init__(self, model):
            self.model = model

        def predict_batch(self, images):
            return self.model(images).argmax(1)  # expect: TL006


    class Trainer:
        def __init__(self, model, optimizer):
            self.model = model
            self.optimizer = optimizer
            self.predictor = Predictor(model)

        def fit(self, train_loader, val_loader, epochs):
            for epoch in range(epochs):
                self.model.train()
                for images, labels in train_loader:
                    self.optimizer.zero_grad()
                    torch.nn.functional.cross_entropy(self.model(images), labels).backward()
                    self.optimizer.step()
                self.model.eval()
                correct = 0
                for images, labels in val_loader:
                    correct += (self.predictor.predict_batch(images) == labels).sum().item()
                print(epoch, correct)
    """


def test_a_predictor_held_by_the_trainer_is_judged_at_the_trainers_call(lint):
    findings = check(lint, _HELD_PREDICTOR, "TL006")
    assert "`predict_batch()`" in findings[0].message
    assert "called at line 29 outside any no-grad block" in findings[0].message
    # Under no-grad at that call, the helper is fine.
    wrapped = _HELD_PREDICTOR.replace(
        "correct += (self.predictor", "with torch.no_grad(): correct += (self.predictor"
    ).replace("  # expect: TL006", "")
    assert lint(wrapped, "TL006") == []


# ----- another framework's models ------------------------------------------------------------------
_KERAS_FILE = """
    import numpy as np
    IMPORTS


    def evaluate(model, dataset):
        losses = []
        for features, labels in dataset:
            predictions = model(features)  # expect: TL006
            losses.append(float(np.mean((predictions - labels) ** 2)))
        return sum(losses) / len(losses)


    def validate_against_reference(keras_model, features):
        import torch

        reference = torch.load("reference.pt")
        reference.eval()
        for batch in features:
            print(reference(torch.from_numpy(batch)), keras_model(batch))  # expect: TL006


    model = load_model("checkpoints/last")
    print(evaluate(model, val_dataset))
    validate_against_reference(model, val_features)
    """


def test_code_that_sees_only_another_framework_gets_no_torch_findings(lint):
    tf_only = _KERAS_FILE.replace("IMPORTS", "import tensorflow as tf")
    findings = lint(tf_only, "TL006")
    # `evaluate` sees only TensorFlow; the function that imports torch itself is torch code.
    assert [f.line for f in findings] == [20]
    assert "`validate_against_reference()`" in findings[0].message


def test_a_file_importing_torch_at_the_top_keeps_its_findings(lint):
    for imports in ("import tensorflow as tf\nimport torch", "import torch", "from models import Net"):
        source = _KERAS_FILE.replace("IMPORTS", imports.replace("\n", "\n    "))
        findings = check(lint, source, "TL006")
        assert "`evaluate()`" in findings[0].message


# ----- the branch a call's constant arguments select ------------------------------------------------
_FRAMEWORK_SWITCH = """
    import torch


    def infer_output_shapes(pipeline, framework):
        tokens = pipeline.tokenizer("a sample sentence", return_tensors=framework)
        outputs = pipeline.model(**tokens) if framework == "pt" else pipeline.model(tokens)  # expect: TL006
        return [o.shape for o in outputs], tokens


    def export_pytorch(pipeline, path):
        GRAD
            shapes, tokens = infer_output_shapes(pipeline, "pt")
        torch.onnx.export(pipeline.model, tuple(tokens.values()), path)


    def export_tensorflow(pipeline, path):
        shapes, tokens = infer_output_shapes(pipeline, framework="tf")
        save_keras(pipeline.model, shapes, path)
    """


def test_a_call_site_selecting_the_other_branch_is_no_path_to_judge(lint):
    clean = _FRAMEWORK_SWITCH.replace("GRAD", "with torch.no_grad():").replace("  # expect: TL006", "")
    assert lint(clean, "TL006") == []
    buggy = _FRAMEWORK_SWITCH.replace("GRAD", "if True:")
    findings = check(lint, buggy, "TL006")
    assert "called at line 13 outside any no-grad block" in findings[0].message


# ----- context managers that switch autograd off for their block -----------------------------------
def test_library_context_manager_documented_to_disable_grad_is_no_grad(lint):
    check(
        lint,
        """
        import torch
        from monai.networks.utils import eval_mode

        for epoch in range(max_epochs):
            net.train()
            for batch in train_loader:
                optimizer.zero_grad()
                loss_function(net(batch["img"]), batch["seg"]).backward()
                optimizer.step()
            with eval_mode(net):
                dice = 0.0
                for batch in val_loader:
                    dice += metric(net(batch["img"]), batch["seg"]).item()
        """,
        "TL006",
    )


def test_generator_context_manager_yielding_under_no_grad_is_no_grad(lint):
    findings = check(
        lint,
        """
        import contextlib
        import torch

        @contextlib.contextmanager
        def frozen(module):
            was_training = module.training
            module.eval()
            try:
                with torch.no_grad():
                    yield module
            finally:
                module.train(was_training)

        @contextlib.contextmanager
        def timed(name):
            start = time.time()
            yield
            print(name, time.time() - start)

        for epoch in range(epochs):
            model.train()
            for x, y in train_loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
            with frozen(model):
                top1 = sum((model(x).argmax(1) == y).sum().item() for x, y in val_loader)
            with timed("test"):
                for x, y in test_loader:
                    top1 += (model(x).argmax(1) == y).sum().item()  # expect: TL006
        """,
        "TL006",
    )
    assert "the evaluation loop at line 30" in findings[0].message


def test_generator_context_manager_with_bare_grad_switch_before_yield(lint):
    check(
        lint,
        """
        from contextlib import contextmanager
        import torch

        @contextmanager
        def no_autograd():
            previous = torch.is_grad_enabled()
            torch.set_grad_enabled(False)
            try:
                yield
            finally:
                torch.set_grad_enabled(previous)

        def evaluate(model, loader):
            model.eval()
            with no_autograd():
                return [model(x).argmax(1) for x, _ in loader]
        """,
        "TL006",
    )


# ----- a helper shared by the training step and a no-grad validation ------------------------------
def test_helper_reached_only_from_backpropagated_step_and_no_grad_validation(lint):
    check(
        lint,
        """
        import torch

        class Trainer:
            def run_epoch(self):
                for inputs in self.train_loader:
                    outputs, losses = self.forward_batch(inputs)
                    self.optimizer.zero_grad()
                    losses["total"].backward()
                    self.optimizer.step()
                self.validate()

            def forward_batch(self, inputs):
                features = self.encoder(inputs["image"])
                outputs = self.predict_motion(inputs, features)
                return outputs, {"total": self.criterion(outputs, inputs)}

            def predict_motion(self, inputs, features):
                outputs = {}
                for frame in self.frames:
                    outputs[frame] = self.pose_net(torch.cat([features, inputs[frame]], 1))
                return outputs

            def validate(self):
                self.encoder.eval()
                with torch.no_grad():
                    outputs, losses = self.forward_batch(next(self.val_iter))
                self.encoder.train()
        """,
        "TL006",
    )


def test_helper_shared_with_validation_that_forgets_no_grad(lint):
    findings = check(
        lint,
        """
        import torch

        class Trainer:
            def run_epoch(self):
                for inputs in self.train_loader:
                    outputs, losses = self.forward_batch(inputs)
                    self.optimizer.zero_grad()
                    losses["total"].backward()
                    self.optimizer.step()
                self.validate()

            def forward_batch(self, inputs):
                features = self.encoder(inputs["image"])
                outputs = self.predict_motion(inputs, features)
                return outputs, {"total": self.criterion(outputs, inputs)}

            def predict_motion(self, inputs, features):
                outputs = {}
                for frame in self.frames:
                    outputs[frame] = self.pose_net(torch.cat([features, inputs[frame]], 1))  # expect: TL006
                return outputs

            def validate(self):
                self.encoder.eval()
                outputs, losses = self.forward_batch(next(self.val_iter))
                self.encoder.train()
        """,
        "TL006",
    )
    assert "`predict_motion()`, called at line 15 outside any no-grad block" in findings[0].message


# ----- evaluation that needs gradients with respect to its input ----------------------------------
def test_input_marked_requires_grad_for_a_gradient_matching_loss(lint):
    check(
        lint,
        """
        import torch

        def test(loader, student, teacher, criterion_kd, jacobian_matching):
            student.eval()
            total = 0.0
            for img, target in loader:
                if jacobian_matching:
                    img.requires_grad = True
                    out_s, out_t = student(img), teacher(img)
                else:
                    with torch.no_grad():
                        out_s, out_t = student(img), teacher(img)
                total += criterion_kd(out_s, out_t, img, target).item()
            return total / len(loader)
        """,
        "TL006",
    )


def test_freezing_the_input_is_no_need_for_gradients(lint):
    check(
        lint,
        """
        import torch

        def test(loader, student):
            student.eval()
            total = 0
            for img, target in loader:
                img.requires_grad = False
                total += (student(img).argmax(1) == target).sum().item()  # expect: TL006
            return total
        """,
        "TL006",
    )


# ----- where the finding points: a call that records a graph --------------------------------------
def test_anchor_is_the_model_method_that_runs_the_model(lint):
    findings = check(
        lint,
        """
        import torch
        import torch.nn as nn

        class EdgeModel(nn.Module):
            def __init__(self, channels):
                super().__init__()
                self.generator = nn.Conv2d(channels, 1, 3, padding=1)
                self.optimizer = torch.optim.Adam(self.generator.parameters())

            def forward(self, images):
                return torch.sigmoid(self.generator(images))

            def process(self, images, edges):
                outputs = self(images)
                return outputs, nn.functional.binary_cross_entropy(outputs, edges)

        class Runner:
            def __init__(self, channels, checkpoint):
                self.edge_model = EdgeModel(channels).to("cuda")
                self.edge_model.load_state_dict(torch.load(checkpoint))

            def train(self, loader, val_loader, mode):
                for images, edges in loader:
                    outputs, loss = self.edge_model.process(images, edges)
                    self.edge_model.optimizer.zero_grad()
                    loss.backward()
                    self.edge_model.optimizer.step()
                self.eval(val_loader, mode)

            def eval(self, val_loader, mode):
                self.edge_model.eval()
                for images, edges in val_loader:
                    if mode == "loss":
                        outputs, loss = self.edge_model.process(images, edges)  # expect: TL006
                        print(loss.item())
                    else:
                        outputs = self.edge_model(images)
                        print((outputs > 0.5).float().mean().item())
        """,
        "TL006",
    )
    assert findings[0].message.startswith("`self.edge_model.process(...)` evaluates with autograd on in `eval()`")


# ----- models taken from what the caller hands over ---------------------------------------------------


RENDERER = """
import torch

def render(nets, rays, for_test=False):
    coarse_net = nets[0]

    def infer(net, points):
        return net(points)

    if for_test:
        out = infer(coarse_net, rays)
    else:
        out = infer(coarse_net, rays)
    return out
"""


def test_renderer_taking_its_model_from_a_handed_list_is_left_to_its_callers(lint):
    """A module function never called in its file, whose model comes out of a list its caller
    passes (``coarse = nets[0]``): the callers, in other files, decide the grad mode."""
    check(lint, RENDERER, "TL006")


def test_renderer_called_in_its_file_outside_no_grad_is_reported(lint):
    findings = check(
        lint,
        RENDERER.replace("return net(points)", "return net(points)  # expect: TL006")
        + """
def predict(checkpoint, loader):
    nets = [torch.load(checkpoint)]
    return [render(nets, rays, for_test=True) for rays in loader]
""",
        "TL006",
    )
    assert "called at line 11 outside any no-grad block" in findings[0].message


# ----- a model whose every parameter is frozen records no graph ------------------------------------
def test_restored_model_frozen_whole_before_testing_is_silent(lint):
    check(
        lint,
        """
        import torch

        def main(weights, test_loader, device):
            restorer = Restorer(depth=8)
            restorer.load_state_dict(torch.load(weights), strict=True)
            restorer.eval()
            for _, param in restorer.named_parameters():
                param.requires_grad = False
            restorer = restorer.to(device)
            scores = []
            for noisy, clean in test_loader:
                restored = restorer(noisy.to(device))
                scores.append(psnr(restored, clean.to(device)).item())
            return sum(scores) / len(scores)

        def export(weights, test_loader):
            net = Restorer(depth=8)
            net.load_state_dict(torch.load(weights))
            net.requires_grad_(False)
            net = net.eval()
            for noisy, _ in test_loader:
                save(net(noisy))
        """,
        "TL006",
    )


def test_freezing_only_the_backbone_or_in_one_branch_still_records(lint):
    findings = check(
        lint,
        """
        import torch

        def main(weights, test_loader, freeze):
            model = Segmenter()
            model.load_state_dict(torch.load(weights))
            model.eval()
            for param in model.backbone.parameters():
                param.requires_grad = False
            for image, mask in test_loader:
                print(iou(model(image), mask))  # expect: TL006

        def probe(weights, test_loader, freeze):
            model = Segmenter()
            model.load_state_dict(torch.load(weights))
            model.eval()
            if freeze:
                model.requires_grad_(False)
            for image, mask in test_loader:
                print(iou(model(image), mask))  # expect: TL006

        def by_name(weights, test_loader):
            model = Segmenter()
            model.load_state_dict(torch.load(weights))
            model.eval()
            for name, param in model.named_parameters():
                if "head" not in name:
                    param.requires_grad = False
            for image, mask in test_loader:
                print(iou(model(image), mask))  # expect: TL006
        """,
        "TL006",
    )
    assert findings[0].message.startswith("`model(...)` evaluates with autograd on in the evaluation loop")


def test_frozen_model_unfrozen_again_still_records(lint):
    check(
        lint,
        """
        import torch

        def main(weights, test_loader, tune_head):
            model = Segmenter()
            model.load_state_dict(torch.load(weights))
            model.eval()
            model.requires_grad_(False)
            if tune_head:
                model.head.requires_grad_(True)
            for image, mask in test_loader:
                print(iou(model(image), mask))  # expect: TL006
        """,
        "TL006",
    )


# ----- a module name rebound to a model built from it --------------------------------------------
def test_imported_module_name_rebound_to_the_model_is_the_model(lint):
    findings = check(
        lint,
        """
        import torch
        import model

        model = model.LanguageModel(ntokens, 400, 1150, 3)
        model = model.cuda()
        optimizer = torch.optim.SGD(model.parameters(), lr=30)

        def evaluate(data_source):
            model.eval()
            total = 0.0
            hidden = model.init_hidden(10)
            for i in range(0, data_source.size(0) - 1, 70):
                data, targets = get_batch(data_source, i, evaluation=True)
                output, hidden = model(data, hidden)  # expect: TL006
                total += len(data) * criterion(model.decoder(output), targets).item()
            return total / len(data_source)

        for epoch in range(1, 40):
            model.train()
            for i in range(0, train_data.size(0) - 1, 70):
                data, targets = get_batch(train_data, i)
                output, hidden = model(data, model.init_hidden(80))
                loss = criterion(model.decoder(output), targets)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            val_loss = evaluate(val_data)
        """,
        "TL006",
    )
    assert "`evaluate()`" in findings[0].message


def test_imported_module_kept_as_module_is_no_model(lint):
    check(
        lint,
        """
        import torch
        import model

        def evaluate(val_loader, features):
            scores = []
            for images, labels in val_loader:
                scores.append(model.encoder(images, labels, features).mean().item())
            return scores

        def export(path):
            model = torch.load(path)
            return model
        """,
        "TL006",
    )


# ----- legacy Variable wrappers and grad switches that cannot be resolved --------------------------
def test_smoke_test_on_a_variable_wrapped_random_batch_is_not_reported(lint):
    check(
        lint,
        """
        import torch
        import torch.nn as nn
        from torch.autograd import Variable

        class TinyNet(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))

            def forward(self, x):
                return self.body(x)

        def make_net():
            return TinyNet()

        def test_tiny():
            net = make_net()
            batch = torch.randn(2, 3, 32, 32)
            out = net(Variable(batch))
            print(out.shape)
        """,
        "TL005",
        "TL006",
    )


def test_evaluation_of_a_trained_model_on_variable_wrapped_data_is_still_reported(lint):
    findings = check(
        lint,
        """
        import torch
        from torch.autograd import Variable

        def test(epoch):
            net.eval()
            for inputs, targets in testloader:
                outputs = net(Variable(inputs, volatile=True))  # expect: TL006
                correct += outputs.argmax(1).eq(targets).sum().item()

        for epoch in range(10):
            train(epoch)
            test(epoch)
        """,
        "TL006",
    )
    assert "`net(...)` evaluates with autograd on in `test()`" in findings[0].message


def test_no_grad_block_through_a_star_import_the_linter_cannot_read_is_not_reported(lint):
    check(
        lint,
        """
        from helpers.common import *

        def evaluate(split):
            model.eval()
            with torch.no_grad():
                for x, y in batches(split):
                    total += criterion(model(x), y).item()
            return total

        for epoch in range(5):
            train_one_epoch()
            evaluate("valid")
        """,
        "TL006",
    )


# ----- frozen in the evaluation, unfrozen again only by the training elsewhere ---------------------
def test_global_model_frozen_by_the_validation_and_unfrozen_by_the_training_loop_is_silent(lint):
    check(
        lint,
        """
        import torch

        recognizer = Recognizer(num_classes=37)
        optimizer = torch.optim.Adam(recognizer.parameters(), lr=1e-3)

        def validate(loader):
            for weight in recognizer.parameters():
                weight.requires_grad = False
            recognizer.eval()
            hits = 0
            for images, labels in loader:
                hits += (recognizer(images).argmax(-1) == labels).sum().item()
            print("val accuracy", hits / len(loader.dataset))

        for epoch in range(30):
            for images, labels in train_loader:
                for weight in recognizer.parameters():
                    weight.requires_grad = True
                recognizer.train()
                loss = torch.nn.functional.cross_entropy(recognizer(images), labels)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            validate(val_loader)
        """,
        "TL006",
    )


def test_unfrozen_between_the_freeze_and_the_forward_still_records(lint):
    findings = check(
        lint,
        """
        import torch

        recognizer = Recognizer(num_classes=37)

        def restore_grads():
            for weight in recognizer.parameters():
                weight.requires_grad = True

        def validate(loader):
            for weight in recognizer.parameters():
                weight.requires_grad = False
            recognizer.eval()
            restore_grads()
            for images, labels in loader:
                print(recognizer(images).argmax(-1).eq(labels).float().mean())  # expect: TL006

        for epoch in range(30):
            train_one_epoch(recognizer, train_loader)
            validate(val_loader)
        """,
        "TL006",
    )
    assert findings[0].message.startswith("`recognizer(...)` evaluates with autograd on in `validate()`")
