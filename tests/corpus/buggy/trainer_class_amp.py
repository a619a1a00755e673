"""A trainer object whose AMP step forgets to clear gradients and clips scaled gradients."""
import torch
import torch.nn.functional as F


class Trainer:
    def __init__(self, model, loader, lr=1e-3, device="cuda"):
        self.device = device
        self.model = model.to(device)
        self.loader = loader
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr)
        self.scaler = torch.amp.GradScaler("cuda")

    def _step(self, batch):
        x, y = (t.to(self.device) for t in batch)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(self.model(x), y)
        self.scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)  # expect: TL014
        self.scaler.step(self.optimizer)  # expect: TL001
        self.scaler.update()
        return loss.item()

    def train_epoch(self):
        self.model.train()
        losses = []
        for batch in self.loader:
            losses.append(self._step(batch))
        return sum(losses) / len(losses)

    def fit(self, epochs):
        for epoch in range(epochs):
            print(f"epoch {epoch}: loss {self.train_epoch():.4f}")
