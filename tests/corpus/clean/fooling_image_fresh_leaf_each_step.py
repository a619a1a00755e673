"""Gradient ascent on an input image: every step rebuilds the leaf tensor from the saved image."""

import numpy as np
import torch
from torch.autograd import Variable
from torch.optim import SGD


def to_leaf(image):
    array = np.float32(image).transpose(2, 0, 1) / 255.0
    tensor = torch.from_numpy(array).unsqueeze(0)
    return Variable(tensor, requires_grad=True)


def to_image(leaf):
    array = leaf.data.numpy()[0].transpose(1, 2, 0)
    return np.uint8(np.clip(array, 0, 1) * 255)


def smoke_test(model_class):
    net = model_class()
    out = net(Variable(torch.randn(1, 3, 32, 32)))
    print(out.size())


class Fooler:
    def __init__(self, model, target):
        self.model = model
        self.target = target
        self.image = np.uint8(np.random.uniform(0, 255, (224, 224, 3)))

    def run(self, steps=150):
        self.model.eval()
        for i in range(steps):
            self.leaf = to_leaf(self.image)
            optimizer = SGD([self.leaf], lr=4)
            optimizer.zero_grad()
            loss = -self.model(self.leaf)[0, self.target]
            loss.backward()
            optimizer.step()
            self.image = to_image(self.leaf)
        return self.image
