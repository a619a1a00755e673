"""Iterative attack: the step helper records its loss under enable_grad, the update runs under no-grad."""

import torch
import torch.nn.functional as F


class SignAttack:
    def __init__(self, model, eps=8 / 255, alpha=2 / 255, steps=10):
        self.model = model
        self.eps, self.alpha, self.steps = eps, alpha, steps

    def input_grad(self, images, labels):
        images = images.clone().requires_grad_()
        with torch.enable_grad():
            logits = self.model(images)
            loss = F.cross_entropy(logits, labels)
        loss.backward()
        return images.grad.detach()

    def class_grads(self, images):
        images = images.clone().requires_grad_()
        with torch.enable_grad():
            logits = self.model(images)
        seed = torch.zeros_like(logits)
        grads = []
        for k in range(logits.shape[1]):
            seed[:, k] = 1.0
            logits.backward(seed, retain_graph=True)
            seed[:, k] = 0.0
            grads.append(images.grad.clone())
            images.grad.zero_()
        return torch.stack(grads, 1)

    def __call__(self, images, labels):
        adv = images.clone()
        for _ in range(self.steps):
            with torch.no_grad():
                grad = self.input_grad(adv, labels)
                adv = adv + self.alpha * grad.sign()
                adv = torch.min(torch.max(adv, images - self.eps), images + self.eps).clamp(0, 1)
                sensitivity = self.class_grads(adv).abs().mean()
        return adv, sensitivity
