"""A speech model trained with counter-based accumulation, fp16 autocast via torch.half, and logit heads."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class CTCHead(nn.Module):
    def __init__(self, dim, vocab):
        super().__init__()
        self.proj = nn.Sequential(nn.Linear(dim, vocab), nn.LogSoftmax(dim=-1))

    def forward(self, x):
        return self.proj(x)


class SpeechTrainer:
    def __init__(self, encoder, vocab, accum=8):
        self.encoder = encoder.cuda()
        self.head = CTCHead(encoder.dim, vocab).cuda()
        self.optimizer = torch.optim.AdamW(list(self.encoder.parameters()) + list(self.head.parameters()), lr=5e-4)
        self.accum = accum
        self.pos_weight = torch.tensor([3.0]).cuda()
        self.vad_loss = nn.BCEWithLogitsLoss(pos_weight=self.pos_weight)

    def train(self, loader, epochs=10):
        pending = 0
        for epoch in range(epochs):
            self.encoder.train()
            self.head.train()
            for feats, labels, speech in loader:
                with torch.autocast(device_type="cuda", dtype=torch.half):
                    h = self.encoder(feats.cuda())
                    log_probs = self.head(h)
                    loss = F.cross_entropy(log_probs.flatten(0, 1), labels.cuda().flatten())  # expect: TL012
                    vad = torch.sigmoid(h.mean(-1))
                    loss = loss + self.vad_loss(vad, speech.cuda().float())  # expect: TL020
                loss.backward()  # expect: TL009, TL018
                pending += 1
                if pending == self.accum:
                    self.optimizer.step()
                    self.optimizer.zero_grad()
                    pending = 0
