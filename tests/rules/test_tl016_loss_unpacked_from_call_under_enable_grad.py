"""TL016: a loss unpacked from a call's result (``loss, kl = self._get_loss(batch)``) was computed by
that call, in the grad mode it ran in: made inside ``torch.enable_grad()`` it has its graph, so its
backward after the block, under an outer ``no_grad``, is fine."""

from expect_markers import check

_PPO = """
import torch

class PPO:
    def step(self, batches):
        with torch.no_grad():
            for batch in batches:
                self._ppo_step(batch)

    def _ppo_step(self, batch):
        with SWITCH:
            out = self.model(batch.states)
            batch.logits = out.logits
            loss, kl = self._get_loss(batch)
        if kl.item() < self.kl_limit:
            loss.backward()  # MARK
            self.optimizer.step()
            self.optimizer.zero_grad()

    def _get_loss(self, batch):
        ratio = (batch.logits - batch.logits_old).exp()
        loss = -(ratio * batch.advantages).mean()
        kl = (batch.logits_old - batch.logits).mean()
        return loss, kl
"""


def test_loss_unpacked_inside_enable_grad_is_silent(lint):
    assert lint(_PPO.replace("SWITCH", "torch.enable_grad()"), "TL016") == []


def test_loss_unpacked_inside_another_no_grad_is_reported(lint):
    check(lint, _PPO.replace("SWITCH", "torch.no_grad()").replace("# MARK", "# expect: TL016"), "TL016")
