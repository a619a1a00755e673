"""Self-supervised depth and pose training, buggy: the project's evaluation context manager leaves
autograd on, the validation runs the pose helper shared with the training step with autograd on,
the pose decoder keeps its layers in a plain dict, and the distillation test records graphs."""

import contextlib
from collections import OrderedDict

import torch
import torch.nn as nn
from monai.networks.utils import eval_mode


@contextlib.contextmanager
def inference(*nets):
    modes = [net.training for net in nets]
    try:
        yield [net.eval() for net in nets]
    finally:
        for net, mode in zip(nets, modes):
            net.train(mode)


class PoseDecoder(nn.Module):
    def __init__(self, channels, frames):
        super().__init__()
        self.convs = OrderedDict()  # expect: TL013
        self.convs["squeeze"] = nn.Conv2d(channels, 256, 1)
        self.convs["pose", 0] = nn.Conv2d(frames * 256, 256, 3, padding=1)
        self.convs["pose", 1] = nn.Conv2d(256, 6 * frames, 1)

    def forward(self, features):
        out = self.convs["squeeze"](features).relu()
        out = self.convs["pose", 0](out).relu()
        return 0.01 * self.convs["pose", 1](out).mean(3).mean(2)


class Trainer:
    def __init__(self, encoder, pose, loaders, lr=1e-4):
        self.encoder, self.pose = encoder, pose
        self.train_loader, self.val_loader = loaders
        params = list(encoder.parameters()) + list(pose.parameters())
        self.optimizer = torch.optim.Adam(params, lr=lr)

    def train(self, epochs):
        for _ in range(epochs):
            for inputs in self.train_loader:
                outputs, losses = self.process_batch(inputs)
                self.optimizer.zero_grad()
                losses["loss"].backward()
                self.optimizer.step()
            self.validate()
            self.report()

    def process_batch(self, inputs):
        features = self.encoder(inputs["image"])
        outputs = self.predict_poses(inputs, features)
        loss = (outputs["translation"] - inputs["odometry"]).abs().mean()
        return outputs, {"loss": loss}

    def predict_poses(self, inputs, features):
        outputs = {}
        for key in ("translation",):
            outputs[key] = self.pose(torch.cat([features, inputs["previous"]], 1))  # expect: TL006
        return outputs

    def validate(self):
        self.encoder.eval()
        self.pose.eval()
        for inputs in self.val_loader:
            outputs, losses = self.process_batch(inputs)
            print(losses["loss"].item())
        self.encoder.train()
        self.pose.train()

    def report(self):
        with inference(self.encoder):
            depth_error = 0.0
            for batch in self.val_loader:
                depth_error += (self.encoder(batch["image"]).mean() - batch["depth"].mean()).abs().item()  # expect: TL006
        with eval_mode(self.encoder):
            for batch in self.val_loader:
                print(self.encoder(batch["image"]).std().item(), depth_error)


def test(test_loader, student, teacher, jacobian_matching):
    student.eval()
    total = 0.0
    for img, target in test_loader:
        if jacobian_matching:
            out_s, out_t = student(img), teacher(img)  # expect: TL006
        else:
            with torch.no_grad():
                out_s, out_t = student(img), teacher(img)
        total += (out_s.argmax(1) == out_t.argmax(1)).float().mean().item()
    return total / len(test_loader)
