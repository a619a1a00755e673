"""The same file also wraps a PyTorch classifier, whose prediction runs with autograd on: that forward
records a graph for nothing, TL006 on it while the Keras path stays silent."""
import tensorflow as tf
import torch


class KerasClassifier:
    def __init__(self, keras_model):
        self.keras_model = keras_model

    def _logits(self, images):
        return self.keras_model(images, training=False)

    def predict(self, images):
        batch = tf.convert_to_tensor(images.cpu().numpy(), dtype=tf.float32)
        return torch.from_numpy(self._logits(batch).numpy())


class TorchClassifier:
    def __init__(self, net):
        self.net = net

    def _logits(self, images):
        return self.net(images)

    def predict(self, images):
        return self._logits(images.cuda())  # expect: TL006
