"""Checks that a sharded wrapper trains like the plain one, for a few steps on random features."""
import torch
import torch.nn as nn


class ProjectionHead(nn.Module):
    def __init__(self, in_dim=128, out_dim=32):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(in_dim, 256), nn.GELU(), nn.Linear(256, out_dim))

    def forward(self, x):
        return self.mlp(x), x


def _train_both(rank, wrap, steps=2):
    torch.manual_seed(rank)
    feats = torch.randn(size=(4, 128)).cuda()
    reference = ProjectionHead().cuda()
    candidate = wrap(ProjectionHead().cuda())
    candidate.load_state_dict(reference.state_dict())
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.01)
    cand_opt = torch.optim.SGD(candidate.parameters(), lr=0.01)
    for _ in range(steps):
        with torch.cuda.amp.autocast():
            ref_loss = reference(feats)[0].pow(2).mean()
            cand_loss = candidate(feats)[0].pow(2).mean()
        ref_opt.zero_grad()
        cand_opt.zero_grad()
        ref_loss.backward()
        cand_loss.backward()
        ref_opt.step()
        cand_opt.step()
        torch.testing.assert_close(ref_loss, cand_loss)


def test_sharded_head_matches(world):
    world.spawn(_train_both, torch.nn.Identity)
