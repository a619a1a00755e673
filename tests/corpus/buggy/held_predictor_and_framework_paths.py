"""A fine-tuning script whose trainer holds a predictor object, next to an export helper shared by
the PyTorch and TensorFlow exports.

Bugs: the predictor's batch prediction runs from the trainer's validation loop with autograd on,
and the PyTorch export traces the shapes outside no-grad (the TensorFlow export's call takes the
other branch and is fine)."""
import torch
from torch import nn


class Predictor:
    def __init__(self, model):
        self.model = model

    def predict_batch(self, images):
        return self.model(images).argmax(1)  # expect: TL006


class Trainer:
    def __init__(self, model, lr=1e-3):
        self.model = model
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        self.predictor = Predictor(model)

    def fit(self, train_loader, val_loader, epochs):
        for epoch in range(epochs):
            self.model.train()
            for images, labels in train_loader:
                self.optimizer.zero_grad()
                nn.functional.cross_entropy(self.model(images), labels).backward()
                self.optimizer.step()
            self.model.eval()
            correct = total = 0
            for images, labels in val_loader:
                correct += (self.predictor.predict_batch(images) == labels).sum().item()
                total += labels.numel()
            print(f"epoch {epoch}: accuracy {correct / total:.3f}")


def infer_output_shapes(pipeline, framework):
    tokens = pipeline.tokenizer("A sample sentence to trace.", return_tensors=framework)
    outputs = pipeline.model(**tokens) if framework == "pt" else pipeline.model(tokens)  # expect: TL006
    return [tuple(o.shape) for o in outputs], tokens


def export_pytorch(pipeline, path, opset=13):
    shapes, tokens = infer_output_shapes(pipeline, "pt")
    with torch.no_grad():
        torch.onnx.export(pipeline.model, tuple(tokens.values()), path, opset_version=opset)
    return shapes


def export_tensorflow(pipeline, path, convert_keras, opset=13):
    shapes, tokens = infer_output_shapes(pipeline, framework="tf")
    convert_keras(pipeline.model, target_opset=opset).save(path)
    return shapes
