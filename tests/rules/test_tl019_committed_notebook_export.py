"""TL019: a ``.py`` file committed next to a notebook of the same name is that notebook's export
(its cells), not a script; real files on disk, the notebook a real ``.ipynb``."""

import json

from cli_helpers import run_cli
from notebook_helpers import markdown, write_notebook
from project_helpers import lint_in_project

CODE = "TL019"

# An export as nbconvert writes it: no display expressions, no magics, no cell markers.
_EXPORT = """\
#!/usr/bin/env python
# coding: utf-8

# # Denoising autoencoder

import torch
from torch import nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

train_set = datasets.FashionMNIST("./.data", train=True, download=True, transform=transforms.ToTensor())
train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=2)

autoencoder = nn.Sequential(nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 784), nn.Sigmoid())
optimizer = torch.optim.Adam(autoencoder.parameters(), lr=0.005)

for epoch in range(10):
    for x, _ in train_loader:
        x = x.view(-1, 784)
        loss = nn.functional.mse_loss(autoencoder(x + 0.2 * torch.randn_like(x)), x)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""
_LOADER_LINE = 12


def _notebook(path):
    return write_notebook(
        path,
        markdown("# Denoising autoencoder"),
        "import torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader",
        "train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=2)",
    )


def test_a_script_without_a_notebook_beside_it_is_reported(tmp_path):
    (finding,) = lint_in_project(tmp_path, {"chapter6/denoising.py": _EXPORT}, "chapter6/denoising.py", CODE)
    assert finding.line == _LOADER_LINE
    assert finding.message.startswith("`DataLoader(..., num_workers=2)` is iterated at import time")


def test_the_export_committed_next_to_its_notebook_is_notebook_code(tmp_path):
    _notebook(tmp_path / "chapter6" / "denoising.ipynb")
    assert lint_in_project(tmp_path, {"chapter6/denoising.py": _EXPORT}, "chapter6/denoising.py", CODE) == []


def test_a_notebook_of_another_name_or_folder_does_not_make_the_script_an_export(tmp_path):
    _notebook(tmp_path / "chapter6" / "denoising_demo.ipynb")
    _notebook(tmp_path / "notebooks" / "denoising.ipynb")
    (finding,) = lint_in_project(tmp_path, {"chapter6/denoising.py": _EXPORT}, "chapter6/denoising.py", CODE)
    assert finding.line == _LOADER_LINE


def test_the_notebook_is_a_dependency_of_the_cached_result(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TORCHLINT_NO_CACHE", raising=False)
    monkeypatch.delenv("TORCHLINT_CACHE_DIR", raising=False)
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "denoising.py").write_text(_EXPORT)

    def codes():
        run = run_cli(["check", "--format", "json", "--select", CODE, "denoising.py"])
        return [(f["line"], f["code"]) for f in json.loads(run.out)]

    assert codes() == [(_LOADER_LINE, CODE)]
    notebook = _notebook(tmp_path / "denoising.ipynb")
    assert codes() == []  # the notebook appeared: the cached finding is not reused
    notebook.unlink()
    assert codes() == [(_LOADER_LINE, CODE)]
