"""A model file with the smoke test at its bottom and a unit-test module's worth of checks: shape
probes on random input and fresh models nobody trains, none of it evaluation."""
import unittest

import torch
import torch.nn as nn
import torch.nn.functional as F


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(in_planes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class SmallResNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU())
        self.layers = nn.Sequential(BasicBlock(64, 64), BasicBlock(64, 128, 2), BasicBlock(128, 256, 2))
        self.linear = nn.Linear(self._infer_features(), num_classes)

    def _infer_features(self):
        return self.layers(self.stem(torch.zeros(1, 3, 32, 32))).mean((2, 3)).shape[1]

    def forward(self, x):
        return self.linear(self.layers(self.stem(x)).mean((2, 3)))


def infer_output_shape(backbone, image_size=(224, 224)):
    return tuple(backbone(torch.randn(1, 3, *image_size)).shape[1:])


def test():
    net = SmallResNet()
    y = net(torch.randn(2, 3, 32, 32))
    print(y.size())


def test_logits_shape():
    model = SmallResNet(num_classes=100)
    assert model(torch.randn(4, 3, 32, 32)).shape == (4, 100)


class SmallResNetTest(unittest.TestCase):
    def setUp(self):
        self.model = SmallResNet()

    def test_eval_is_deterministic(self):
        self.model.eval()
        x = torch.randn(2, 3, 32, 32)
        torch.testing.assert_close(self.model(x), self.model(x))

    def test_batch_of_one(self):
        self.assertEqual(self.model(torch.ones(1, 3, 32, 32) * 0.5).shape, (1, 10))


if __name__ == "__main__":
    test()
    unittest.main()
