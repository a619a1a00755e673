"""A TensorFlow model test mixin (its test cases live in other files) of a library that ships both
frameworks: the Keras models are built from a random config and called on dummy inputs; only the
cross-check imports torch, in its own function, under no-grad. The Keras calls are no PyTorch evaluation (no TL005/TL006)."""
import tempfile

import numpy as np
import tensorflow as tf


class KerasModelTesterMixin:
    all_model_classes = ()

    def test_numpy_arrays_inputs(self):
        config, inputs = self.model_tester.prepare_config_and_inputs()
        for model_class in self.all_model_classes:
            model = model_class(config)
            arrays = {k: np.array(v) for k, v in inputs.items()}
            model(arrays)

    def test_inputs_embeds(self):
        config, inputs = self.model_tester.prepare_config_and_inputs()
        for model_class in self.all_model_classes:
            model = model_class(config)
            inputs["inputs_embeds"] = model.get_input_embeddings()(inputs.pop("input_ids"))
            model(inputs)

    def test_saved_model_roundtrip(self):
        config, inputs = self.model_tester.prepare_config_and_inputs()
        for model_class in self.all_model_classes:
            model = model_class(config)
            model(model.dummy_inputs)
            with tempfile.TemporaryDirectory() as tmp:
                tf.saved_model.save(model, tmp)

    def test_torch_equivalence(self):
        import torch

        config, inputs = self.model_tester.prepare_config_and_inputs()
        for model_class in self.all_model_classes:
            tf_model = model_class(config)
            pt_model = self.torch_twin(model_class)(config)
            pt_model.eval()
            with torch.no_grad():
                pt_out = pt_model(**{k: torch.from_numpy(np.array(v)) for k, v in inputs.items()})
            tf_out = tf_model(inputs)
            self.assertLess(float(np.abs(pt_out[0].numpy() - tf_out[0].numpy()).max()), 1e-4)
