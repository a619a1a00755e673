"""TL011 in code written for a PyTorch before 1.0, where `F.dropout`'s `training` defaulted to
False: dropout without `training=` was off in both modes there, so the rule stays silent. A project
says so by a pin at its root; a file, by code that no newer release runs (`loss.data[0]` on a
scalar), which also holds for the modules that file imports."""

import pytest
from project_helpers import lint_in_project

CODE = "TL011"

MODEL = """
import torch.nn as nn
import torch.nn.functional as F

class CaptionModel(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.logit = nn.Linear(hidden, vocab)

    def forward(self, seq):
        x = self.embed(seq)
        x = F.dropout(x, 0.5)
        return self.logit(x)
"""


def train_script(report: str) -> str:
    return f"""
import torch
from models import CaptionModel

model = CaptionModel(1000, 512)
optimizer = torch.optim.Adam(model.parameters())
criterion = torch.nn.CrossEntropyLoss()
for seq, target in loader:
    optimizer.zero_grad()
    loss = criterion(model(seq), target)
    loss.backward()
    optimizer.step()
    {report}
"""


def test_reported_in_a_project_of_today(tmp_path):
    files = {"models.py": MODEL, "train.py": train_script("print(loss.item())")}
    (finding,) = lint_in_project(tmp_path, files, "models.py", CODE)
    assert finding.line == 13
    assert "`F.dropout(x, 0.5)` has no `training=` argument" in finding.message


def test_silent_when_the_training_script_indexes_its_scalar_loss(tmp_path):
    # `loss.data[0]` raises on 1.0 and later: this project runs on 0.3, where dropout was off by default.
    files = {"models.py": MODEL, "train.py": train_script("print(loss.data[0])")}
    assert lint_in_project(tmp_path, files, "models.py", CODE) == []


def test_silent_when_a_full_reduction_is_indexed(tmp_path):
    helper = """
    import torch
    from models import CaptionModel

    def masked_loss(logits, target, mask):
        total = (torch.nn.functional.cross_entropy(logits, target, reduce=False) * mask).sum()
        return total / mask.sum().data[0]
    """
    files = {"models.py": MODEL, "utils/losses.py": helper, "train.py": train_script("print(loss.item())")}
    assert lint_in_project(tmp_path, files, "models.py", CODE) == []


def test_silent_two_imports_away_from_the_old_script(tmp_path):
    # train.py -> nets (a package) -> nets.captioner: all three run with the 0.3-era training loop.
    files = {
        "nets/__init__.py": "from .captioner import CaptionModel\n",
        "nets/captioner.py": MODEL,
        "train.py": train_script("print(loss.data[0])").replace("from models import", "from nets import"),
    }
    assert lint_in_project(tmp_path, files, "nets/captioner.py", CODE) == []


def test_reported_when_only_an_unrelated_old_script_shows_old_code(tmp_path):
    # A repository of chapters: chapter 1 was written for 0.3, chapter 5 (the model) runs on today's
    # PyTorch and never runs with chapter 1's code.
    old_chapter = """
    import torch
    from torch.autograd import Variable

    w = Variable(torch.randn(3), requires_grad=True)
    for step in range(100):
        loss = (w ** 2).sum()
        loss.backward()
        print(step, loss.data[0])
    """
    files = {
        "chapter1/linear.py": old_chapter,
        "chapter5/models.py": MODEL,
        "chapter5/train.py": train_script("print(loss.item())"),
    }
    assert [f.line for f in lint_in_project(tmp_path, files, "chapter5/models.py", CODE)] == [13]


@pytest.mark.parametrize(
    "report",
    [
        # The first row of a batch, not a scalar: runs on every release, says nothing about one.
        "first = model(seq).data[0]",
        # A reduction over one dimension keeps a dimension to index.
        "print(loss.unsqueeze(0).sum(0).data[0])",
        # Indexing another name than the one backpropagated.
        "scores = model(seq); print(scores.data[0])",
    ],
)
def test_indexing_that_runs_on_every_release_proves_nothing(tmp_path, report):
    files = {"models.py": MODEL, "train.py": train_script(report)}
    assert [f.line for f in lint_in_project(tmp_path, files, "models.py", CODE)] == [13]


@pytest.mark.parametrize(
    ("pin_file", "pin"),
    [
        ("requirements.txt", "numpy\ntorch==0.4.1\ntorchvision==0.2.1\n"),
        ("requirements-train.txt", "torch<1.0  # the captioning code uses Variable\n"),
        ("environment.yml", "dependencies:\n  - python=3.6\n  - pytorch=0.3.1=py36_cuda8\n"),
        ("setup.py", "from setuptools import setup\nsetup(name='cap', install_requires=['torch<=0.4.1'])\n"),
    ],
)
def test_silent_under_a_pin_before_1_0(tmp_path, pin_file, pin):
    files = {"models.py": MODEL, "train.py": train_script("print(loss.item())"), pin_file: pin}
    assert lint_in_project(tmp_path, files, "models.py", CODE) == []


@pytest.mark.parametrize(
    "pin",
    [
        "torch>=0.4.1\n",  # a lower bound only: today's releases satisfy it
        "torch==1.13.1\n",
        "torchvision==0.2.1\npytorch-lightning==0.9.0\n",  # other packages' versions
        "# torch==0.4.1 was used for the paper\ntorch==2.1\n",  # a comment is not a pin
    ],
)
def test_reported_under_a_pin_that_admits_1_0(tmp_path, pin):
    files = {"models.py": MODEL, "train.py": train_script("print(loss.item())"), "requirements.txt": pin}
    assert [f.line for f in lint_in_project(tmp_path, files, "models.py", CODE)] == [13]


def test_the_pin_file_is_a_dependency_of_the_result(tmp_path):
    from project_helpers import write

    from torchlint.engine.lint import lint_file
    from torchlint.engine.rule import all_rules

    write(tmp_path, {"pyproject.toml": "", "models.py": MODEL, "train.py": train_script("print(loss.item())")})
    result = lint_file(str(tmp_path / "models.py"), [all_rules()[CODE]])
    assert [f.line for f in result.findings] == [13]
    # The root's listing is consulted, so a pin file added later changes the cached result.
    assert str(tmp_path.resolve()) in result.dependencies
