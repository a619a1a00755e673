"""A segmentation trainer whose AMP step clips in a helper before unscaling and steps the scheduler first."""
import torch
import torch.nn.functional as F


class SegTrainer:
    def __init__(self, model, loader, epochs, max_norm=5.0):
        self.model = model.cuda()
        self.loader = loader
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
        self.scheduler = torch.optim.lr_scheduler.PolynomialLR(self.optimizer, total_iters=epochs * len(loader))
        self.scaler = torch.cuda.amp.GradScaler()
        self.epochs, self.max_norm = epochs, max_norm

    def _clip(self):
        torch.nn.utils.clip_grad_value_(self.model.parameters(), self.max_norm)  # expect: TL014

    def step(self, images, masks):
        self.optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            logits = self.model(images.cuda())
            loss = F.cross_entropy(logits, masks.cuda(), ignore_index=255)
        self.scaler.scale(loss).backward()
        self._clip()
        self.scheduler.step()  # expect: TL015
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss.detach()

    def train(self):
        for epoch in range(self.epochs):
            self.model.train()
            for images, masks in self.loader:
                self.step(images, masks)
