"""A sweep over meta-learning wrappers that all wrap the one model built before the loop: the model
outlives the loop, so each iteration's fresh Adam throws away the moments of the last."""
import torch
from metalearn import MetaLearner, MetaSGDLearner


def compare_wrappers(data, steps=20):
    model = torch.nn.GRU(3, 2)
    for wrapper_class in [MetaLearner, MetaSGDLearner]:
        learner = wrapper_class(model, inner_lr=1e-2)
        optimizer = torch.optim.Adam(learner.parameters(), lr=1e-3)  # expect: TL004
        for step in range(steps):
            out, _ = learner.adapted(data)(data)
            optimizer.zero_grad()
            out.pow(2).mean().backward()
            optimizer.step()
