"""Helpers for the command-line tests: run `torchlint` in-process and capture what it prints."""

from __future__ import annotations

import io
import sys
import textwrap
from dataclasses import dataclass

from torchlint.cli import main

# A real bug (TL016): backward inside torch.no_grad(). Line 5 is the backward call.
BUGGY = textwrap.dedent(
    """\
    import torch
    def train(model, opt, x, y):
        with torch.no_grad():
            loss = model(x).sub(y).pow(2).mean()
            loss.backward()
            opt.zero_grad()
    """
)

# TL004 on line 4: an optimizer built in every iteration of the training loop.
LOOP = textwrap.dedent(
    """\
    import torch
    def train(model, loader):
        for x, y in loader:
            opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            model(x).sum().backward()
            opt.step()
            opt.zero_grad()
    """
)

CLEAN = textwrap.dedent(
    """\
    import torch
    def evaluate(model, x):
        model.eval()
        with torch.no_grad():
            return model(x).argmax(1)
    """
)


@dataclass
class Run:
    code: int
    out: str
    err: str


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def run_cli(args, monkeypatch=None, stdin: bytes | None = None, tty: bool = False) -> Run:
    """``torchlint ARGS`` in this process; stdout/stderr captured (stdout may pretend to be a terminal)."""
    out, err = (FakeTTY() if tty else io.StringIO()), io.StringIO()
    old = sys.stdout, sys.stderr, sys.stdin
    sys.stdout, sys.stderr = out, err
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    try:
        code = main([str(a) for a in args])
    finally:
        sys.stdout, sys.stderr, sys.stdin = old
    return Run(code, out.getvalue(), err.getvalue())


def write(path, text: str | bytes = CLEAN):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def assert_one_line_error(run: Run, *words: str):
    """Exit 2 with exactly one line on stderr, naming the culprit, and no traceback."""
    assert run.code == 2, (run.out, run.err)
    lines = run.err.strip().splitlines()
    assert len(lines) == 1, run.err
    assert lines[0].startswith("torchlint: error: ")
    assert "Traceback" not in run.err
    for word in words:
        assert word in lines[0], lines[0]
