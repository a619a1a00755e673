"""Iterative attack: the step helper computes its loss in the caller's no-grad block."""

import torch
import torch.nn.functional as F


class SignAttack:
    def __init__(self, model, eps=8 / 255, alpha=2 / 255, steps=10):
        self.model = model
        self.eps, self.alpha, self.steps = eps, alpha, steps

    def input_grad(self, images, labels):
        images = images.clone().requires_grad_()
        loss = F.cross_entropy(self.model(images), labels)
        loss.backward()  # expect: TL016
        return images.grad.detach()

    def __call__(self, images, labels):
        adv = images.clone()
        for _ in range(self.steps):
            with torch.no_grad():
                grad = self.input_grad(adv, labels)
                adv = adv + self.alpha * grad.sign()
                adv = torch.min(torch.max(adv, images - self.eps), images + self.eps).clamp(0, 1)
        return adv
