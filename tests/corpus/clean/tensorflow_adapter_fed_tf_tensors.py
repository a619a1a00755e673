"""An adapter that lets a PyTorch attack library query a Keras classifier: the inputs are converted to
TensorFlow tensors before the Keras model runs, and only its numpy output goes back to torch. No torch
graph is recorded (no TL006)."""
import tensorflow as tf
import torch


class KerasClassifier:
    def __init__(self, keras_model, channels_last=True):
        self.keras_model = keras_model
        self.channels_last = channels_last

    def _logits(self, images):
        return self.keras_model(images, training=False)

    def predict(self, images):
        batch = tf.convert_to_tensor(images.cpu().numpy(), dtype=tf.float32)
        if self.channels_last:
            batch = tf.transpose(batch, perm=[0, 2, 3, 1])
        logits = self._logits(batch)
        return torch.from_numpy(logits.numpy()).to(images.device)
