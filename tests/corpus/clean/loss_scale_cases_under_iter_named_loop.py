"""A mixed-precision unit test: for every step at which an overflow is injected (the outer loop is
named for that step) and every way of clearing gradients, each case builds its two models and their
optimizer, trains a few steps and compares with reference weights recorded once before the loops.
Nothing a case trains is read by the next case or after the loops (no TL003, no TL004)."""
import unittest

import torch
import torch.nn as nn


class TwoWeights(nn.Module):
    def __init__(self, offset):
        super().__init__()
        self.a = nn.Parameter(torch.arange(4, dtype=torch.float32) + offset)
        self.b = nn.Parameter(torch.ones(4) * offset)

    def forward(self, x):
        return (x * self.a * self.b).sum()


class TestOverflowSkipsStep(unittest.TestCase):
    def setUp(self):
        self.x = torch.ones(4)

    def _reference(self, steps):
        left, right = TwoWeights(1.0), TwoWeights(2.0)
        opt = torch.optim.SGD(list(left.parameters()) + list(right.parameters()), lr=0.1, momentum=0.5)
        for _ in range(steps):
            opt.zero_grad()
            (left(self.x) + right(self.x)).backward()
            opt.step()
        return [p.detach().clone() for p in list(left.parameters()) + list(right.parameters())]

    def test_overflow_step_is_skipped(self):
        expected = self._reference(2)
        for overflow_iter in (0, 1, 2):
            for clear in ("set_to_none", "zero"):
                left = TwoWeights(1.0)
                right = TwoWeights(2.0)
                optimizer = torch.optim.SGD(
                    [{"params": left.parameters()}, {"params": right.parameters()}], lr=0.1, momentum=0.5
                )
                for step in range(3):
                    optimizer.zero_grad(set_to_none=clear == "set_to_none")
                    (left(self.x) + right(self.x)).backward()
                    if step == overflow_iter:
                        left.a.grad[0] = float("inf")
                    grads = [p.grad for p in list(left.parameters()) + list(right.parameters())]
                    if all(torch.isfinite(g).all() for g in grads):
                        optimizer.step()
                weights = [p.detach() for p in list(left.parameters()) + list(right.parameters())]
                for got, want in zip(weights, expected):
                    self.assertTrue(torch.allclose(got, want))


if __name__ == "__main__":
    unittest.main()
