"""TL006: forward passes whose output nobody keeps, tests' private helpers named like the tests they
serve, and tests that delegate to a checking helper of a mixin in another file (heldout23, peft's
test suite: a tiny hub model with a fresh adapter run on dummy input)."""

from expect_markers import check
from project_helpers import lint_in_project

CODE = "TL006"

# ----- a forward whose value is dropped evaluates nothing -------------------------------------------


def test_forward_whose_output_is_dropped_is_silent(lint):
    # "should not raise": the statement throws the output away, so its graph dies with it.
    source = """
        import torch
        from peft import get_peft_model

        class AdapterTests:
            def test_delete_adapter(self, model_id, config):
                model = get_peft_model(self.transformers_class.from_pretrained(model_id), config)
                model.delete_adapter("default")
                inputs = self.prepare_inputs_for_testing()
                model.base_model(**inputs)  # should not raise

            def test_weighted_adapters(self, model_id, config, names):
                model = get_peft_model(self.transformers_class.from_pretrained(model_id), config)
                inputs = self.prepare_inputs_for_testing()
                model.eval()
                for name in names:
                    model.set_adapter(name)
                    model(**inputs)[0]

            def test_input_embeds(self, model_id, config):
                model = get_peft_model(self.transformers_class.from_pretrained(model_id), config)
                inputs = self.prepare_inputs_for_testing()
                embeds = model.get_input_embeddings()(inputs["input_ids"])
                model.forward(inputs_embeds=embeds)
        """
    assert lint(source, CODE) == []


def test_forward_whose_output_is_kept_is_reported(lint):
    source = """
        import torch

        def evaluate(model, val_loader):
            model.eval()
            predictions = []
            for x, _ in val_loader:
                logits = model(x)  # expect: TL006
                predictions.append(logits.argmax(1))
            return predictions
        """
    findings = check(lint, source, CODE)
    assert findings[0].message.startswith("`model(...)` evaluates with autograd on in `evaluate()`")


def test_dropped_forward_beside_a_kept_one_points_at_the_kept_one(lint):
    # The dropped call no longer anchors the finding: the first forward whose output is used does.
    source = """
        import torch

        def valid(model, val_loader, example):
            model.eval()
            model(example)  # warm-up: the output is dropped
            total = 0
            for x, y in val_loader:
                output = model(x)  # expect: TL006
                total += (output.argmax(1) == y).sum().item()
            return total
        """
    check(lint, source, CODE)


def test_dropped_forward_read_through_a_hook_of_the_function_is_reported(lint):
    # The hook keeps what the layer computes: the dropped call is how the features are extracted.
    source = """
        import torch

        def extract_test_features(model, test_loader):
            model.eval()
            feats = []
            handle = model.layer4.register_forward_hook(lambda m, i, o: feats.append(o))
            for x, _ in test_loader:
                model(x)  # expect: TL006
            handle.remove()
            return feats
        """
    check(lint, source, CODE)


def test_dropped_forward_of_a_class_hooked_in_its_init_is_reported(lint):
    source = """
        import torch

        class FeatureExtractor:
            def __init__(self, model, layer):
                self.model = model
                self.features = []
                getattr(model, layer).register_forward_hook(self._keep)

            def _keep(self, module, inputs, output):
                self.features.append(output)

            def predict(self, images):
                self.model.eval()
                self.model(images)  # expect: TL006
                return self.features[-1]
        """
    check(lint, source, CODE)


# ----- a test's private implementation, named like the test -----------------------------------------


def test_private_test_helper_that_asserts_on_results_is_silent(lint):
    source = """
        import torch
        from peft import get_peft_model

        class CommonTester:
            def _test_merge_layers(self, model_id, config):
                model = get_peft_model(self.transformers_class.from_pretrained(model_id), config)
                dummy_input = self.prepare_inputs_for_testing()
                model.eval()
                logits = model(**dummy_input)[0]
                model.merge_adapter()
                logits_merged = model(**dummy_input)[0]
                assert torch.allclose(logits, logits_merged, atol=1e-4)
                model.save_pretrained(self.tmp_dir)
        """
    assert lint(source, CODE) == []


def test_private_test_named_helper_that_asserts_nothing_is_reported(lint):
    # Named like a test but evaluating: it prints an accuracy and asserts nothing.
    source = """
        import torch

        def _test_epoch(model, test_loader):
            model.eval()
            correct = 0
            for x, y in test_loader:
                correct += (model(x).argmax(1) == y).sum().item()  # expect: TL006
            print("accuracy", correct / len(test_loader.dataset))
        """
    check(lint, source, CODE)


# ----- a test that delegates to a checking helper of a mixin in another file -------------------------

_MIXIN = """\
import torch


class CommonTester:
    def _test_merge_layers(self, model_id, config):
        model = self.build(model_id, config)
        dummy_input = self.prepare_inputs_for_testing()
        logits = model(**dummy_input)[0]
        model.merge_adapter()
        assert torch.allclose(logits, model(**dummy_input)[0], atol=1e-4)

    def _score_merged(self, model_id, config):
        model = self.build(model_id, config)
        model.merge_adapter()
        return model(**self.prepare_inputs_for_testing())[0]
"""

_TESTS = """\
import torch

from testing_common import CommonTester

MODELS = ["tiny-gpt2", "tiny-opt"]


class TestMergeLayers(CommonTester):
    def test_merge_layers(self):
        for model_id in MODELS:
            self._test_merge_layers(model_id, {"r": 8})

    def test_merged_scores(self):
        for model_id in MODELS:
            print(self._score_merged(model_id, {"r": 8}).mean())
"""


def test_test_delegating_to_a_checking_helper_in_another_file(tmp_path):
    # `test_merge_layers` checks through the mixin's asserting helper: a unit test. `test_merged_scores`
    # runs a helper that asserts nothing and prints what it computes: still reported.
    files = {"tests/testing_common.py": _MIXIN, "tests/test_merge.py": _TESTS}
    findings = lint_in_project(tmp_path, files, "tests/test_merge.py", CODE)
    assert [(f.line, f.code) for f in findings] == [(15, CODE)]
    assert findings[0].message.startswith(
        "`self._score_merged(...)` evaluates with autograd on in `test_merged_scores()`"
    )
