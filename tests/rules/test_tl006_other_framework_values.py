"""TL006 in a file that imports PyTorch and another framework: a call is judged by where its values
come from (torchmodel.frameworks.foreign_call). A model another framework built, or a call fed only
that framework's tensors, records no autograd graph; a torch model in the same file still does."""

from expect_markers import check

_ADAPTER = """
    import numpy as np
    import tensorflow as tf
    import torch


    class KerasAdapter:
        def __init__(self, keras_model):
            self.keras_model = keras_model

        def _scores(self, images):
            return self.keras_model(images, training=False)

        def predict(self, images):
            batch = tf.convert_to_tensor(images.cpu().numpy(), dtype=tf.float32)
            if self.channels_last:
                batch = tf.transpose(batch, perm=[0, 2, 3, 1])
            scores = self._scores(FED)
            return torch.from_numpy(scores.numpy())


    class TorchAdapter:
        def __init__(self, net):
            self.net = net

        def _scores(self, images):
            return self.net(images)

        def predict(self, images):
            return self._scores(images.cuda())  # expect: TL006
    """


def test_a_helper_fed_only_tensorflow_tensors_records_no_torch_graph(lint):
    findings = check(lint, _ADAPTER.replace("FED", "batch"), "TL006")
    assert [f.line for f in findings] == [_line(_ADAPTER, "return self._scores(images.cuda())")]
    assert "self._scores" in findings[0].message


def test_a_helper_fed_a_value_of_unknown_origin_keeps_its_reading(lint):
    # `images` may be a torch tensor: the TensorFlow adapter's call is judged as before.
    findings = lint(_ADAPTER.replace("FED", "images"), "TL006")
    assert sorted(f.line for f in findings) == [
        _line(_ADAPTER, "scores = self._scores(FED)"),
        _line(_ADAPTER, "return self._scores(images.cuda())"),
    ]


_MIXED_SCRIPT = """
    import tensorflow as tf
    import torch
    from models import ResNet

    teacher_model = BUILD
    student = ResNet()
    student.load_state_dict(torch.load("student.pt"))


    def evaluate(loader):
        student.eval()
        agree = 0
        for images, _ in loader:
            hint = teacher_model(images.numpy())
            agree += int((hint.numpy().argmax(1) == student(images).argmax(1).numpy()).sum())  # expect: TL006
        return agree


    print(evaluate(val_loader))
    """


def test_a_model_keras_builds_is_no_torch_model(lint):
    for build in (
        "tf.keras.Sequential([tf.keras.layers.Dense(10)])",
        "tf.keras.models.load_model('teacher_model.keras')",
        "KerasTeacher()",
    ):
        source = _MIXED_SCRIPT.replace("BUILD", build)
        if build == "KerasTeacher()":
            source = source.replace(
                "teacher_model = ", "class KerasTeacher(tf.keras.Model):\n        pass\n\n\n    teacher_model = "
            )
        # Reported on the torch student's call (the marker), not on the Keras teacher_model's before it.
        check(lint, source, "TL006")


def test_a_call_of_a_function_tensorflow_wraps_is_no_torch_forward(lint):
    source = """
    import tensorflow as tf
    import torch


    class Runner:
        @tf.function
        def model(self, images):
            return self.keras_model(images, training=False)

        def evaluate(self, loader):
            return [self.model(x) for x, _ in loader]
    """
    assert lint(source, "TL006") == []
    assert lint(source.replace("@tf.function", "@staticmethod"), "TL006") != []


def test_a_torch_only_file_is_unchanged(lint):
    # No other framework imported: the adapter's conversions are unknown calls, the call is judged.
    source = _ADAPTER.replace("FED", "batch").replace("import tensorflow as tf", "import mylib as tf")
    assert sorted(f.line for f in lint(source, "TL006")) == [
        _line(_ADAPTER, "scores = self._scores(FED)"),
        _line(_ADAPTER, "return self._scores(images.cuda())"),
    ]


def _line(source: str, text: str) -> int:
    """The line of ``text`` in ``source`` as the linter numbers it (dedenting keeps the lines)."""
    return next(number for number, line in enumerate(source.splitlines(), 1) if text in line)
