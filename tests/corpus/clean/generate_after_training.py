"""A small language model trained, moved to the CPU for sampling, then saved with its optimizer and resumed."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyLM(nn.Module):
    def __init__(self, vocab=256, dim=128, context=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(context, dim)
        self.block = nn.TransformerEncoderLayer(dim, 4, 4 * dim, batch_first=True, norm_first=True)
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.size(1), device=idx.device))
        return self.head(self.block(x))


def train_model(model, loader, optimizer, device, epochs):
    for epoch in range(epochs):
        model.train()
        for inputs, targets in loader:
            inputs, targets = inputs.to(device), targets.to(device)
            optimizer.zero_grad()
            logits = model(inputs)
            loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.3f}")


@torch.no_grad()
def generate(model, idx, steps, context=64):
    for _ in range(steps):
        logits = model(idx[:, -context:])[:, -1]
        idx = torch.cat([idx, logits.argmax(-1, keepdim=True)], dim=1)
    return idx


device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = [(torch.randint(0, 256, (8, 64)), torch.randint(0, 256, (8, 64))) for _ in range(10)]
model = TinyLM().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=4e-4, weight_decay=0.1)
train_model(model, loader, optimizer, device, epochs=2)

model.to("cpu")
model.eval()
print(generate(model, torch.zeros(1, 1, dtype=torch.long), steps=20))

torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, "checkpoint.pth")

checkpoint = torch.load("checkpoint.pth", weights_only=True)
model = TinyLM().to(device)
model.load_state_dict(checkpoint["model"])
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.1)
optimizer.load_state_dict(checkpoint["optimizer"])
train_model(model, loader, optimizer, device, epochs=1)
