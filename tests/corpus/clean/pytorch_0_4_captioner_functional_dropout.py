"""An image captioner written for PyTorch 0.4: `Variable`, `torch.no_grad()`, and the loss read
back with `loss.data[0]`, which no release since 1.0 runs. Its `F.dropout` calls pass no
`training=`, and before 1.0 that default was False: the dropout is off in both modes, never
stuck on in eval."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable


class ShowAttendTell(nn.Module):
    def __init__(self, vocab_size, feat_size=2048, hidden=512, drop=0.5):
        super(ShowAttendTell, self).__init__()
        self.drop = drop
        self.embed = nn.Embedding(vocab_size + 1, hidden)
        self.init_h = nn.Linear(feat_size, hidden)
        self.cell = nn.LSTMCell(hidden * 2, hidden)
        self.att = nn.Linear(hidden, feat_size)
        self.logit = nn.Linear(hidden, vocab_size + 1)

    def forward(self, feats, seq):
        h = F.tanh(self.init_h(feats.mean(1)))
        c = h.clone()
        outputs = []
        for t in range(seq.size(1) - 1):
            weights = F.softmax(torch.bmm(feats, self.att(h).unsqueeze(2)).squeeze(2))
            context = (feats * weights.unsqueeze(2)).sum(1)
            word = F.dropout(self.embed(seq[:, t]), self.drop)
            h, c = self.cell(torch.cat([word, F.dropout(context, self.drop)], 1), (h, c))
            outputs.append(F.log_softmax(self.logit(F.dropout(h, self.drop))))
        return torch.stack(outputs, 1)


def train(loader, val_loader, vocab_size, epochs=30):
    model = ShowAttendTell(vocab_size).cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=4e-4)
    for epoch in range(epochs):
        model.train()
        for feats, seq, mask in loader:
            feats, seq, mask = Variable(feats.cuda()), Variable(seq.cuda()), Variable(mask.cuda())
            optimizer.zero_grad()
            logprobs = model(feats, seq)
            target = seq[:, 1:]
            loss = -(logprobs.gather(2, target.unsqueeze(2)).squeeze(2) * mask[:, 1:]).sum() / mask.sum()
            loss.backward()
            optimizer.step()
            print("epoch %d loss %.3f" % (epoch, loss.data[0]))
        model.eval()
        total = 0.0
        with torch.no_grad():
            for feats, seq, mask in val_loader:
                logprobs = model(feats.cuda(), seq.cuda())
                total += -(logprobs.gather(2, seq.cuda()[:, 1:].unsqueeze(2)).squeeze(2)).mean()
        print("val nll %.3f" % (total / len(val_loader)))
        torch.save(model.state_dict(), "captioner.pth")
