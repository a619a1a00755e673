"""Nothing in a user's files may crash a run: each bad input gives a clear finding or message,
never a traceback, and the other files are still linted."""

import os
import sys

import pytest
from cli_helpers import BUGGY, run_cli, write

from torchlint.engine import lint as engine
from torchlint.engine.lint import lint_bytes, lint_file, lint_text
from torchlint.engine.rule import Rule, all_rules


@pytest.fixture(autouse=True)
def _in_tmp(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FORCE_COLOR", raising=False)


def only(result):
    [finding] = result.findings
    return finding.code, finding.line, finding.column, finding.message


def assert_still_linted_beside(tmp_path, bad_name, bad_content, *words, args=()):
    """The bad file gets one TL000 finding naming the problem; the good file next to it still gets its finding."""
    write(tmp_path / bad_name, bad_content)
    write(tmp_path / "train.py", BUGGY)
    run = run_cli(["-q", "--select", "TL016", ".", *args])
    assert run.code == 1
    assert "Traceback" not in run.out + run.err
    lines = run.out.splitlines()
    assert any(line.startswith("train.py:5:9: TL016") for line in lines), run.out
    [bad] = [line for line in lines if line.startswith(bad_name)]
    assert "TL000 [syntax-error]" in bad
    for word in words:
        assert word in bad
    return bad


def test_syntax_error_is_one_finding_at_the_parser_position(tmp_path):
    result = lint_text("import torch\nfor x in loader\n    pass\n", "t.py")
    assert only(result) == ("TL000", 2, 16, "cannot parse: expected ':'")
    bad = assert_still_linted_beside(tmp_path, "broken.py", "x = [1,\n", "cannot parse")
    assert bad.startswith("broken.py:1:5: TL000")


def test_syntax_error_column_counts_characters_not_bytes():
    result = lint_text('s = "ééé" $ 1\n', "t.py")
    assert only(result)[:3] == ("TL000", 1, 11)


def test_undecodable_bytes(tmp_path):
    result = lint_bytes(b"x = 1\ny = '\xff\xfe'\n", "t.py")
    code, line, column, message = only(result)
    assert (code, line, column) == ("TL000", 2, 6)
    assert "cannot decode as utf-8" in message and "coding" in message
    assert_still_linted_beside(tmp_path, "latin.py", b"name = 'caf\xe9'\n", "cannot decode")


def test_declared_encodings_and_bom_are_honoured():
    assert lint_bytes(b"# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n", "t.py").findings == []
    assert lint_bytes(b"\xef\xbb\xbfx = 1\n", "t.py").findings == []
    code, _, _, message = only(lint_bytes(b"# coding: klingon\nx = 1\n", "t.py"))
    assert code == "TL000" and "klingon" in message


def test_nul_byte(tmp_path):
    result = lint_bytes(b"x = 1\ny = 2\x00\n", "t.py")
    assert only(result)[:3] == ("TL000", 2, 6)
    assert "NUL byte" in only(result)[3]
    assert_still_linted_beside(tmp_path, "binary.py", b"\x00\x01\x02ELF", "NUL byte")


def test_empty_file_is_clean(tmp_path):
    assert lint_bytes(b"", "t.py").findings == []
    write(tmp_path / "__init__.py", "")
    run = run_cli(["__init__.py"])
    assert (run.code, run.err) == (0, "")


def test_crlf_and_form_feed_keep_lines_right(tmp_path):
    source = BUGGY.replace("\n", "\r\n").replace("import torch", "import torch\x0c")
    write(tmp_path / "crlf.py", source.encode())
    run = run_cli(["crlf.py", "--select", "TL016"])
    assert run.out.splitlines()[:2] == [
        run.out.splitlines()[0],
        "    5 |         loss.backward()",
    ]
    assert run.out.startswith("crlf.py:5:9: TL016")


def test_file_over_the_size_limit_is_skipped_with_a_message(tmp_path):
    write(tmp_path / "weights_table.py", b"W = [\n" + b"    0.125, 0.25, 0.5, 1.0,\n" * 400_000 + b"]\n")  # 10.8 MB
    write(tmp_path / "train.py", BUGGY)
    run = run_cli(["-q", "--select", "TL016", "."])
    assert run.code == 1
    assert run.out.startswith("train.py:5:9: TL016")
    assert "weights_table.py: skipped, 10.8 MB is over the 1 MB limit" in run.err
    assert "--max-file-size 0" in run.err and "Traceback" not in run.err


def test_large_file_is_linted_when_the_limit_is_raised(tmp_path):
    write(tmp_path / "big.py", BUGGY + ("# " + "=" * 1000 + "\n") * 1500)  # 1.5 MB, mostly comments
    run = run_cli(["-q", "--select", "TL016", "--max-file-size", "2", "big.py"])
    assert run.out.startswith("big.py:5:9: TL016")
    assert run.err == ""


@pytest.mark.parametrize(
    "source",
    ["x = " + "-" * 200_000 + "1\n", "x = a" + " + a" * 100_000 + "\n", "x = " + "(" * 300 + ")" * 300 + "\n"],
    ids=["unary", "binary", "parentheses"],
)
def test_deeply_nested_expressions(tmp_path, source):
    code, line, _, message = only(lint_text(source, "t.py"))
    assert (code, line) == ("TL000", 1)
    assert "nested" in message
    assert_still_linted_beside(tmp_path, "deep.py", source, "nested")


class Recursive(Rule):
    """A rule that recurses over the tree (as a naive visitor would) and so overflows on deep code."""

    code, name, severity, summary = "TL998", "recursive-rule", "warning", "test"

    def check(self, ctx):
        def depth(node):
            import ast

            return 1 + max((depth(child) for child in ast.iter_child_nodes(node)), default=0)

        if depth(ctx.tree) > 50:
            yield self.report(ctx.tree.body[0], "deep")


class Broken(Rule):
    code, name, severity, summary = "TL997", "broken-rule", "error", "test"

    def check(self, ctx):
        yield self.report(ctx.tree.body[0], "first")
        raise ValueError("oops")


def test_a_rule_that_hits_the_recursion_limit_is_skipped_for_that_file_only():
    deep = "x = a" + " + a" * (sys.getrecursionlimit() * 2) + "\n"
    try:
        compile(deep, "t.py", "exec", flags=0x400)  # ast.PyCF_ONLY_AST: make sure the parser itself copes
    except RecursionError:
        pytest.skip("this Python's parser cannot build the tree")
    result = lint_text(deep, "t.py", [Recursive, all_rules()["TL016"]])
    assert result.findings == []
    assert result.problems == ["t.py: TL998 skipped: the code is nested too deeply for this rule (recursion limit)"]
    shallow = lint_text("x = a + a\n", "t.py", [Recursive])
    assert shallow.findings == [] and shallow.problems == []


def test_a_crashing_rule_does_not_hide_other_rules(tmp_path):
    result = lint_text(BUGGY, "t.py", [Broken, all_rules()["TL016"]])
    assert [f.code for f in result.findings] == ["TL016"]
    assert result.problems[0].startswith("t.py: TL997 crashed (ValueError: oops)")


def test_a_crashing_rule_is_a_warning_on_stderr(tmp_path, monkeypatch):
    from torchlint.engine import rule

    monkeypatch.setitem(rule._REGISTRY, Broken.code, Broken)
    write(tmp_path / "train.py", BUGGY)
    run = run_cli(["-q", "train.py", "--select", "TL016,TL997"])
    assert run.code == 1 and run.out.startswith("train.py:5:9: TL016")
    assert "torchlint: warning: train.py: TL997 crashed (ValueError: oops)" in run.err
    assert "Traceback" not in run.err


# ----- files that cannot be read ----------------------------------------------------------------


def test_permission_denied_is_a_finding_and_the_run_goes_on(tmp_path, monkeypatch):
    # Tests run as root, which reads anything: simulate the refusal where the engine opens files.
    write(tmp_path / "secret.py", "x = 1\n")
    real_open = open

    def guarded_open(path, *args, **kwargs):
        if os.path.basename(str(path)) == "secret.py":
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(engine, "open", guarded_open, raising=False)
    bad = assert_still_linted_beside(tmp_path, "secret.py", "x = 1\n", "cannot read: permission denied")
    assert bad.startswith("secret.py:1:1: TL000")


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read a file without read permission")
def test_real_unreadable_file(tmp_path):  # pragma: no cover - only as a normal user
    path = write(tmp_path / "secret.py", "x = 1\n")
    path.chmod(0)
    try:
        assert "permission denied" in only(lint_file(str(path)))[3]
    finally:
        path.chmod(0o644)


def test_broken_symlink(tmp_path):
    os.symlink(tmp_path / "gone.py", tmp_path / "link.py")
    write(tmp_path / "train.py", BUGGY)
    run = run_cli(["-q", "--select", "TL016", "."])
    assert "link.py:1:1: TL000 [syntax-error] cannot read: no such file (a broken symbolic link?)" in run.out
    assert "train.py:5:9: TL016" in run.out


def test_fifo_is_not_read(tmp_path):
    os.mkfifo(tmp_path / "pipe.py")  # opening it would block forever
    write(tmp_path / "train.py", BUGGY)
    run = run_cli(["-q", "--select", "TL016", "."])
    assert "pipe.py:1:1: TL000 [syntax-error] cannot read: not a regular file" in run.out
    assert "train.py:5:9: TL016" in run.out


def test_unreadable_directory_is_reported_and_the_run_goes_on(tmp_path, monkeypatch):
    from torchlint.engine import files

    write(tmp_path / "locked" / "a.py", BUGGY)
    write(tmp_path / "train.py", BUGGY)
    real_scandir = os.scandir

    def guarded_scandir(path="."):
        if os.path.basename(str(path)) == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(files.os, "scandir", guarded_scandir)
    run = run_cli(["-q", "--select", "TL016", "."])
    assert run.out.splitlines() == [
        "locked:1:1: TL000 [syntax-error] cannot read directory: permission denied",
        "train.py:5:9: TL016 [backward-under-no-grad] " + run.out.splitlines()[1].split("] ", 1)[1],
    ]


class Spinner(Rule):
    """A rule that never finishes, and even swallows ordinary exceptions while it spins."""

    code, name, severity, summary = "TL996", "spinning-rule", "error", "test"

    def check(self, ctx):
        while True:
            try:
                sum(range(1000))
            except Exception:
                pass
        yield  # pragma: no cover


def test_a_rule_that_never_finishes_is_stopped_by_its_cpu_budget():
    result = lint_text(BUGGY, "t.py", [Spinner, all_rules()["TL016"]], rule_budget=0.3)
    assert [f.code for f in result.findings] == ["TL016"]
    assert result.problems == [
        "t.py: TL996 stopped after using its 0.3 s CPU budget on this file (a performance bug in the rule,"
        " please report it); its findings for this file are missing"
    ]
    # The timer is gone afterwards: slow code outside a rule is not interrupted.
    import signal

    assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)


def test_the_command_applies_a_cpu_budget(tmp_path, monkeypatch):
    from torchlint.engine import rule

    monkeypatch.setattr(engine, "DEFAULT_RULE_CPU_BUDGET", 0.3)
    monkeypatch.setattr("torchlint.engine.runner.DEFAULT_RULE_CPU_BUDGET", 0.3)
    monkeypatch.setitem(rule._REGISTRY, Spinner.code, Spinner)
    write(tmp_path / "train.py", BUGGY)
    run = run_cli(["-q", "train.py", "--select", "TL016,TL996"])
    assert run.code == 1 and run.out.startswith("train.py:5:9: TL016")
    assert "train.py: TL996 stopped after using its 0.3 s CPU budget" in run.err


def test_a_model_run_as_a_comprehensions_iterable_does_not_crash_the_evaluation_rules(tmp_path):
    # The untrained-run check walks back from the model call through its ancestors; a comprehension's
    # `for` clause has no position of its own (it crashed TL005 and TL006 with an AttributeError).
    source = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.drop = nn.Dropout(0.1)

    def forward(self, x, scale=1.0):
        return self.fc(self.drop(x)) * scale


def eval_model_batch(model, batch, scale):
    return [float(v) for v in model.forward(batch, scale=scale) * 100.0]


def main():
    net = Net()
    net.eval()
    evals = []
    for _ in range(10):
        evals += eval_model_batch(net, torch.randn(8, 4), 1.0)
    print(evals)


main()
"""
    write(tmp_path / "probe.py", source)
    rules = [all_rules()["TL005"], all_rules()["TL006"]]
    result = lint_file(str(tmp_path / "probe.py"), rules)
    assert result.problems == []
    # A freshly built model nobody trains or loads, run on random input: a probe, not an evaluation.
    assert result.findings == []
