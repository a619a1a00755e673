"""Test-time adaptation (TENT-style) whose prediction loop is decorated with inference_mode:
the entropy-minimisation step it calls runs backward with autograd off."""
import torch
import torch.nn as nn


def collect_norm_params(model):
    params = []
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.requires_grad_(True)
            params += [m.weight, m.bias]
    return params


def softmax_entropy(logits):
    return -(logits.softmax(1) * logits.log_softmax(1)).sum(1)


def adapt_and_predict(model, x, optimizer):
    logits = model(x)
    loss = softmax_entropy(logits).mean()
    loss.backward()  # expect: TL016
    optimizer.step()
    optimizer.zero_grad()
    return logits.argmax(1)


@torch.inference_mode()
def run_stream(model, stream, lr=1e-3):
    model.train()
    model.requires_grad_(False)
    optimizer = torch.optim.SGD(collect_norm_params(model), lr=lr, momentum=0.9)
    predictions = []
    for x, _ in stream:
        predictions.append(adapt_and_predict(model, x, optimizer))
    return torch.cat(predictions)
