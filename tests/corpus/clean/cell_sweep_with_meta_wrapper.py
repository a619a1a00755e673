"""A unit test sweeping recurrent cell classes: each iteration builds a cell of the class, wraps it
for meta-learning and takes one outer step with Adam over the wrapper. Every iteration is a run of
its own."""
import unittest

import torch
from metalearn import MetaLearner


class CellSweepTest(unittest.TestCase):
    def test_linear_head(self):
        model = torch.nn.Linear(3, 1)
        self.assertEqual(model(torch.randn(2, 3)).shape, (2, 1))

    def test_outer_step_changes_the_loss(self):
        data = torch.randn(10, 40, 3)
        for cell_class in [torch.nn.RNN, torch.nn.LSTM, torch.nn.GRU]:
            torch.manual_seed(0)
            model = cell_class(3, 2)
            learner = MetaLearner(model, inner_lr=1e-2)
            optimizer = torch.optim.Adam(learner.parameters(), lr=1e-3)
            out, _ = learner.adapted(data)(data)
            before = out.pow(2).mean()
            optimizer.zero_grad()
            before.backward()
            optimizer.step()
            after, _ = learner.adapted(data)(data)
            self.assertNotEqual(before.item(), after.pow(2).mean().item())
