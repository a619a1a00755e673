"""TL011 functional-dropout-always-on: F.dropout in a module without `training=`."""

from expect_markers import check

CODE = "TL011"


# ----- positives ------------------------------------------------------------------------------


def test_mnist_style_forward(lint):
    findings = check(
        lint,
        """
        import torch.nn as nn
        import torch.nn.functional as F

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(9216, 128)
                self.fc2 = nn.Linear(128, 10)

            def forward(self, x):
                x = F.relu(self.fc1(x))
                x = F.dropout(x, p=0.5)  # expect: TL011
                return self.fc2(x)
        """,
        CODE,
    )
    finding = findings[0]
    assert finding.severity == "error" and finding.name == "functional-dropout-always-on"
    assert "`F.dropout(x, p=0.5)` has no `training=` argument" in finding.message
    assert "`training=self.training`" in finding.message


def test_full_module_path_and_positional_p(lint):
    check(
        lint,
        """
        import torch
        class Head(torch.nn.Module):
            def forward(self, x):
                return torch.nn.functional.dropout(x, 0.2)  # expect: TL011
        """,
        CODE,
    )


def test_dropout2d_imported_by_name_in_helper_method(lint):
    check(
        lint,
        """
        from torch import nn
        from torch.nn.functional import dropout2d, alpha_dropout
        class Encoder(nn.Module):
            def _drop(self, x):
                return dropout2d(x, p=self.p, inplace=True)  # expect: TL011
            def forward(self, x):
                return alpha_dropout(self._drop(x), 0.1)  # expect: TL011
        """,
        CODE,
    )


def test_subclass_of_local_module_and_nested_function(lint):
    check(
        lint,
        """
        import torch.nn as nn
        import torch.nn.functional as F
        class Base(nn.Module):
            pass
        class Block(Base):
            def forward(self, x):
                def drop(t):
                    return F.feature_alpha_dropout(t, 0.1)  # expect: TL011
                return drop(x)
        """,
        CODE,
    )


def test_lightning_module_forward(lint):
    check(
        lint,
        """
        import lightning as L
        import torch.nn.functional as F
        class LitModel(L.LightningModule):
            def forward(self, x):
                return self.out(F.dropout(self.hidden(x), 0.3))  # expect: TL011
        """,
        CODE,
    )


def test_torch_dropout_alias(lint):
    check(
        lint,
        """
        import torch.nn as nn
        import torch.nn.functional as functional
        class M(nn.Module):
            def forward(self, x):
                return functional.dropout3d(x)  # expect: TL011
        """,
        CODE,
    )


# ----- hard negatives -------------------------------------------------------------------------


def test_training_passed_by_keyword_or_position(lint):
    assert (
        lint(
            """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        class Net(nn.Module):
            def forward(self, x):
                x = F.dropout(x, p=0.5, training=self.training)
                x = F.dropout(x, 0.5, self.training)
                x = F.dropout2d(x, 0.1, self.training and self.use_dropout)
                return torch.dropout(x, 0.1, self.training)
        """,
            CODE,
        )
        == []
    )


def test_explicit_training_true_is_mc_dropout(lint):
    assert (
        lint(
            """
        import torch.nn as nn
        import torch.nn.functional as F
        class BayesianNet(nn.Module):
            def forward(self, x):
                return F.dropout(self.fc(x), p=0.2, training=True)
        """,
            CODE,
        )
        == []
    )


def test_outside_any_module_class(lint):
    assert (
        lint(
            """
        import torch.nn.functional as F
        def augment(x):
            return F.dropout(x, p=0.1)
        class Augmenter:
            def __call__(self, x):
                return F.dropout(x, 0.1)
        """,
            CODE,
        )
        == []
    )


def test_dropout_module_and_kwargs_forwarding(lint):
    assert (
        lint(
            """
        import torch.nn as nn
        import torch.nn.functional as F
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.drop = nn.Dropout(0.5)
            def forward(self, x, **kwargs):
                x = self.drop(x)
                return F.dropout(x, **kwargs)
        """,
            CODE,
        )
        == []
    )


def test_lightning_training_step_runs_only_in_training(lint):
    assert (
        lint(
            """
        import lightning as L
        import torch.nn.functional as F
        class Lit(L.LightningModule):
            def training_step(self, batch, batch_idx):
                x = F.dropout(batch[0], 0.1)
                return self(x).sum()
        """,
            CODE,
        )
        == []
    )


def test_unrelated_dropout_function(lint):
    assert (
        lint(
            """
        import torch.nn as nn
        from mylib import dropout
        class Net(nn.Module):
            def forward(self, x):
                return dropout(x, 0.1)
        """,
            CODE,
        )
        == []
    )


# ----- family: dropout on a path that only runs in training, or in a no-grad sampling method --------


def test_dropout_guarded_by_the_training_flag_is_silent(lint):
    assert (
        lint(
            """
        import torch.nn as nn
        import torch.nn.functional as F

        class TransformerLayer(nn.Module):
            def __init__(self, dim, p=0.1, attn_p=0.0):
                super().__init__()
                self.proj = nn.Linear(dim, dim)
                self.p, self.attn_p = p, attn_p

            def attend(self, scores):
                if not self.training:
                    return scores.softmax(-1)
                return F.dropout(scores.softmax(-1), self.attn_p)

            def forward(self, x):
                if self.training and self.p > 0:
                    x = F.dropout(x, p=self.p)
                h = self.proj(x)
                return F.dropout(h, self.p) if self.training else h
        """,
            CODE,
        )
        == []
    )


def test_dropout_guarded_by_a_config_flag_or_on_the_eval_branch_is_reported(lint):
    source = """
        import torch.nn as nn
        import torch.nn.functional as F

        class Block(nn.Module):
            def forward(self, x):
                if self.use_dropout and self.p > 0:
                    x = F.dropout(x, p=self.p)  # expect: TL011
                if self.training:
                    x = self.norm(x)
                else:
                    x = F.dropout(x, 0.1)  # expect: TL011
                if not self.training or self.p == 0:
                    return F.dropout2d(x, 0.1)  # expect: TL011
                return x
        """
    check(lint, source, CODE)


def test_dropout_as_an_option_of_a_no_grad_sampling_method_is_silent(lint):
    assert (
        lint(
            """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class CharRNN(nn.Module):
            def forward(self, x, h):
                out, h = self.rnn(self.embed(x), h)
                return self.head(out), h

            @torch.no_grad()
            def sample(self, start, steps, temperature=1.0, dropout=0.0):
                x, h, out = start, None, []
                for _ in range(steps):
                    emb = F.dropout(self.embed(x), p=dropout)
                    y, h = self.rnn(emb, h)
                    x = torch.multinomial((self.head(y[:, -1]) / temperature).softmax(-1), 1)
                    out.append(x)
                return torch.cat(out, 1)
        """,
            CODE,
        )
        == []
    )


def test_dropout_in_forward_next_to_a_no_grad_block_is_reported(lint):
    source = """
        import torch
        import torch.nn as nn
        import torch.nn.functional as F

        class Student(nn.Module):
            def forward(self, x):
                with torch.no_grad():
                    target = self.teacher(x)
                x = F.dropout(self.backbone(x), 0.2)  # expect: TL011
                return self.head(x), target
        """
    check(lint, source, CODE)


# ----- a rate that is zero on every path, a class only ever trained -----------------------------------

_MESSAGE_PASSING = """
import torch
import torch.nn as nn
import torch.nn.functional as F

class EdgeDecoder(nn.Module):
    def __init__(self, n_in, n_hid, edge_types, drop_rate=0.0):
        super().__init__()
        self.msg = nn.Linear(2 * n_in, n_hid)
        self.out = nn.Linear(n_in + n_hid, n_in)
        self.drop_rate = drop_rate

    def forward(self, nodes, senders, receivers):
        msg = F.relu(self.msg(torch.cat([nodes[senders], nodes[receivers]], -1)))
        msg = F.dropout(msg, p=self.drop_rate){marker}
        agg = torch.zeros_like(nodes[:, : msg.size(-1)]).index_add_(0, receivers, msg)
        return nodes + self.out(torch.cat([nodes, agg], -1))

decoder = EdgeDecoder(n_in=4, n_hid=64, edge_types=2{extra})
optimizer = torch.optim.Adam(decoder.parameters(), lr=5e-4)
for epoch in range(100):
    for nodes, senders, receivers, target in loader:
        optimizer.zero_grad()
        loss = F.mse_loss(decoder(nodes, senders, receivers), target)
        loss.backward()
        optimizer.step()
decoder.eval()
with torch.no_grad():
    print(sum(F.mse_loss(decoder(n, s, r), t).item() for n, s, r, t in val_loader))
"""


def test_rate_zero_in_a_file_that_only_defines_the_class_is_reported(lint):
    # Without a training script building the class here, other files may build it with a rate.
    source = _MESSAGE_PASSING.format(marker="  # expect: TL011", extra="")
    check(lint, source[: source.index("decoder = EdgeDecoder")], CODE)


def test_rate_passed_by_a_construction_is_reported(lint):
    source = _MESSAGE_PASSING.format(marker="  # expect: TL011", extra=", drop_rate=0.2")
    (finding,) = check(lint, source, CODE)
    assert finding.line == 15
    assert "`F.dropout(msg, p=self.drop_rate)` has no `training=` argument" in finding.message


def test_rate_zero_on_every_path_is_silent(lint):
    # The constructor's default 0.0 is what every construction of the file leaves in place.
    check(lint, _MESSAGE_PASSING.format(marker="", extra=""), CODE)


_GAN = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim

class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.fc2 = nn.Linear(256, 1)

    def forward(self, x):
        x = F.dropout(F.leaky_relu(self.fc1(x), 0.2), 0.3){marker}
        return torch.sigmoid(self.fc2(x))

class Maker(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(100, 784)

    def forward(self, z):
        return torch.tanh(self.fc(z))

def sample_grid(noise):
    maker.eval()
    images = maker(noise)
    maker.train()
    return images

maker = Maker().cuda()
critic = Critic().cuda()
opt_c = optim.Adam(critic.parameters(), lr=2e-4)
opt_m = optim.Adam(maker.parameters(), lr=2e-4)
for epoch in range(20):
    for real, _ in loader:
        critic.zero_grad()
        loss_c = bce(critic(real), ones) + bce(critic(maker(torch.randn(64, 100)).detach()), zeros)
        loss_c.backward()
        opt_c.step()
        maker.zero_grad()
        loss_m = bce(critic(maker(torch.randn(64, 100))), ones)
        loss_m.backward()
        opt_m.step()
    sample_grid(torch.randn(25, 100))
{evaluation}"""


def test_class_evaluated_somewhere_is_reported(lint):
    evaluation = "critic.eval()\nscores = critic(held_out)\n"
    (finding,) = check(lint, _GAN.format(marker="  # expect: TL011", evaluation=evaluation), CODE)
    assert finding.line == 14 and "no `training=` argument" in finding.message


def test_class_run_under_no_grad_is_reported(lint):
    evaluation = "with torch.no_grad():\n    scores = critic(held_out)\n"
    check(lint, _GAN.format(marker="  # expect: TL011", evaluation=evaluation), CODE)


def test_class_only_ever_trained_is_silent(lint):
    # Only the generator is switched to eval mode; the critic runs in training mode wherever it runs.
    check(lint, _GAN.format(marker="", evaluation=""), CODE)


# ----- a rate gated on the training flag -------------------------------------------------------

_ATTENTION = """
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

class SelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)

    def _attend(self, q, k, v, mask=None, drop_rate: float = 0.0):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        if mask is not None:
            scores = scores + mask
        weights = F.dropout(scores.softmax(-1), p=drop_rate){marker}
        return weights @ v

    def forward(self, x, mask=None):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return self._attend(q, k, v, mask=mask, drop_rate={rate})
"""


def test_rate_passed_in_every_mode_is_reported(lint):
    source = _ATTENTION.format(marker="  # expect: TL011", rate="self.cfg.attention_dropout")
    (finding,) = check(lint, source, CODE)
    assert finding.line == 17 and "has no `training=` argument" in finding.message


def test_rate_zero_when_not_training_at_the_call_site_is_silent(lint):
    source = _ATTENTION.format(marker="", rate="0.0 if not self.training else self.cfg.attention_dropout")
    check(lint, source, CODE)


def test_rate_chosen_by_the_training_flag_in_the_method_is_silent(lint):
    check(
        lint,
        """
        import torch.nn as nn
        import torch.nn.functional as F

        class Embedder(nn.Module):
            def __init__(self, vocab, dim, p=0.1):
                super().__init__()
                self.table = nn.Embedding(vocab, dim)
                self.p = p

            def forward(self, ids):
                rate = self.p if self.training else 0.0
                return F.dropout(self.table(ids), rate)
        """,
        CODE,
    )


def test_rate_gated_on_something_else_is_reported(lint):
    # A rate switched by a flag that is not the module's mode stays on in eval mode.
    source = _ATTENTION.format(marker="  # expect: TL011", rate="0.0 if self.cfg.deterministic else 0.1")
    check(lint, source, CODE)
