"""A model library's test module and its export script.

The test cases hold a tester object (``self.tester = ...`` in ``setUp``) whose helpers build a tiny
model from a random config and check output shapes: unit-test helpers, not evaluation. The export
helper runs the model once to read output shapes; the PyTorch export calls it under no-grad and the
TensorFlow export passes ``framework="tf"``, which takes the other branch (no TL006)."""
import unittest

import torch
from tinylib.modeling import TinyClassifier, TinyConfig


def random_ids(shape, vocab_size):
    return torch.randint(0, vocab_size, shape)


class ClassifierTester:
    def __init__(self, parent, batch_size=4, seq_length=7):
        self.parent = parent
        self.batch_size = batch_size
        self.seq_length = seq_length

    def prepare_config_and_inputs(self):
        config = TinyConfig()
        input_ids = random_ids((self.batch_size, self.seq_length), config.vocab_size)
        labels = random_ids((self.batch_size,), config.num_labels)
        return config, input_ids, labels

    def create_and_check_sequence_prediction(self, config, input_ids, labels):
        model = TinyClassifier(config)
        model.to("cpu")
        model.eval()
        logits, loss = model(input_ids, labels=labels)
        self.parent.assertEqual(logits.shape, (self.batch_size, config.num_labels))
        self.parent.assertEqual(loss.dim(), 0)

    def create_and_check_batch_inference(self, config, input_ids, labels):
        model = TinyClassifier(config)
        model.eval()
        batched = model(input_ids)
        for i in range(input_ids.shape[0]):
            single = model(input_ids[i : i + 1])
            self.parent.assertTrue(torch.allclose(single, batched[i : i + 1], atol=1e-5))


class ClassifierTest(unittest.TestCase):
    def setUp(self):
        self.tester = ClassifierTester(self)

    def test_sequence_prediction(self):
        self.tester.create_and_check_sequence_prediction(*self.tester.prepare_config_and_inputs())

    def test_batch_inference(self):
        self.tester.create_and_check_batch_inference(*self.tester.prepare_config_and_inputs())


def infer_output_shapes(pipeline, framework):
    tokens = pipeline.tokenizer("A sample sentence to trace.", return_tensors=framework)
    outputs = pipeline.model(**tokens) if framework == "pt" else pipeline.model(tokens)
    return [tuple(o.shape) for o in outputs], tokens


def export_pytorch(pipeline, path, opset=13):
    with torch.no_grad():
        shapes, tokens = infer_output_shapes(pipeline, "pt")
        torch.onnx.export(pipeline.model, tuple(tokens.values()), path, opset_version=opset)
    return shapes


def export_tensorflow(pipeline, path, convert_keras, opset=13):
    shapes, tokens = infer_output_shapes(pipeline, framework="tf")
    convert_keras(pipeline.model, target_opset=opset).save(path)
    return shapes
