"""TL011 when the dropout rate is a parameter of ``forward`` chosen per call: off (a literal zero) at
every call outside a training step -> dropout is already off wherever the model is evaluated; a
call that evaluates with a non-zero rate, or a caller the analysis cannot follow -> reported."""

import pytest
from expect_markers import check
from project_helpers import lint_in_project

CODE = "TL011"

_DECODER = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class WordDecoder(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.cell = nn.GRU(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, vocab)

    def forward(self, tokens, state, keep_rate):
        tokens = F.dropout(tokens, keep_rate)
        hidden, state = self.cell(tokens, state)
        return self.out(hidden), state
"""
_SEQ2SEQ = """\
import torch
import torch.nn as nn
import torch.nn.functional as F

from .decoder import WordDecoder


class Seq2Seq(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.decoder = WordDecoder(vocab, dim)

    def forward(self, rate, tokens, state=None):
        return self.decoder(self.embed(tokens), state, rate)

    def fit_batch(self, optimizer, tokens, targets, rate):
        logits, _ = self(rate, tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item()

    @torch.no_grad()
    def score(self, tokens, targets):
        logits, _ = self(EVAL_RATE, tokens)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten()).item()
"""
_TRAIN = """\
import torch
from textgen.model import Seq2Seq

net = Seq2Seq(1000, 64)
net = net.to("cuda")
opt = torch.optim.Adam(net.parameters())
for tokens, targets in torch.load("batches.pt"):
    net.fit_batch(opt, tokens, targets, 0.3)
    net.eval()
    print(net.score(tokens, targets))
    net.train()
"""


def _project(eval_rate: str, train: str = _TRAIN) -> dict[str, str]:
    return {
        "textgen/__init__.py": "",
        "textgen/decoder.py": _DECODER,
        "textgen/model.py": _SEQ2SEQ.replace("EVAL_RATE", eval_rate),
        "train.py": train,
    }


def test_rate_zero_at_every_call_outside_training_in_another_file_is_silent(tmp_path):
    assert lint_in_project(tmp_path, _project("0."), "textgen/decoder.py", CODE) == []


@pytest.mark.parametrize("eval_rate", ["0.2", "rate_for(tokens)"])
def test_rate_the_evaluation_passes_nonzero_is_reported(tmp_path, eval_rate):
    (finding,) = lint_in_project(tmp_path, _project(eval_rate), "textgen/decoder.py", CODE)
    assert finding.line == 13 and "`F.dropout(tokens, keep_rate)` has no `training=`" in finding.message


def test_a_model_called_directly_by_a_script_keeps_the_finding(tmp_path):
    # `net(0.5, x)` in the script: a call the evaluation makes with a non-zero rate.
    train = _TRAIN.replace("print(net.score(tokens, targets))", "print(net(0.5, tokens))")
    (finding,) = lint_in_project(tmp_path, _project("0.", train), "textgen/decoder.py", CODE)
    assert finding.line == 13


def test_an_instance_handed_on_keeps_the_finding(tmp_path):
    # `evaluate(net)` may call the model with any rate: not followed, so reported.
    train = _TRAIN.replace("print(net.score(tokens, targets))", "evaluate(net)")
    (finding,) = lint_in_project(tmp_path, _project("0.", train), "textgen/decoder.py", CODE)
    assert finding.line == 13


_ONE_FILE = """
import torch
import torch.nn as nn
import torch.nn.functional as F

class Tagger(nn.Module):
    def __init__(self, dim, tags):
        super().__init__()
        self.proj = nn.Linear(dim, tags)

    def forward(self, x, drop):
        return self.proj(F.dropout(x, p=drop)){marker}

model = Tagger(32, 9)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in torch.load("train.pt"):
    loss = F.cross_entropy(model(x, 0.25), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
model.eval()
with torch.no_grad():
    for x, y in torch.load("valid.pt"):
        print((model(x, {rate}).argmax(-1) == y).float().mean())
"""


def test_script_evaluating_with_rate_zero_is_silent(lint):
    check(lint, _ONE_FILE.format(marker="", rate="0.0"), CODE)


def test_script_evaluating_with_the_training_rate_is_reported(lint):
    (finding,) = check(lint, _ONE_FILE.format(marker="  # expect: TL011", rate="0.25"), CODE)
    assert finding.line == 12 and "has no `training=` argument" in finding.message
