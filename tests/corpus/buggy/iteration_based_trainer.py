"""An iteration-based trainer (no epochs) with micro-batches and AMP helpers split into methods."""
import torch
import torch.nn.functional as F


class IterTrainer:
    def __init__(self, model, loader, max_iters=90000, micro_batches=2, lr=0.02):
        self.model = model.cuda()
        self.loader = loader
        self.data_iter = iter(loader)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr, momentum=0.9)
        self.scaler = torch.amp.GradScaler("cuda")
        self.max_iters, self.micro_batches = max_iters, micro_batches

    def _next(self):
        try:
            return next(self.data_iter)
        except StopIteration:
            self.data_iter = iter(self.loader)
            return next(self.data_iter)

    def _backward(self, loss):
        self.scaler.scale(loss).backward()  # expect: TL009

    def run(self):
        self.model.train()
        it = 0
        while it < self.max_iters:
            for _ in range(self.micro_batches):
                images, targets = self._next()
                with torch.autocast("cuda", dtype=torch.float16):
                    loss = F.cross_entropy(self.model(images.cuda()), targets.cuda())
                self._backward(loss)

            def clip():
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), 10.0)  # expect: TL014

            clip()
            self.scaler.step(self.optimizer)  # expect: TL001
            self.scaler.update()
            it += 1
            if it % 20 == 0:
                print(f"iter {it}: loss {loss.item():.4f} scale {self.scaler.get_scale():.0f}")
