"""The engine's project phase: each linted file reaches its project (``ctx.project``), a directory
lint (in one process or several) and a lint of the files one by one give the same cross-file
answers, and ``FileResult.dependencies`` lists the other files each lint consulted."""

from __future__ import annotations

import ast
import os

import pytest
from project_helpers import REACH, reach, write

from torchlint.analysis.callgraph import resolve_call
from torchlint.analysis.summaries import function_summary
from torchlint.engine import config, runner
from torchlint.engine.files import discover
from torchlint.engine.lint import lint_file, lint_source
from torchlint.engine.rule import Rule


class CrossFileProbe(Rule):
    """Reports, for every call, where the function it runs is defined and what that function runs
    transitively (a summary): the cross-file answers a rule can get, made visible as findings."""

    code, name, severity = "TL999", "cross-file-probe", "warning"

    def check(self, ctx):
        for call in ctx.calls:
            target = resolve_call(ctx, call)
            if target is None:
                continue
            runs = sorted(function_summary(target, REACH, reach, frozenset()))
            root = ctx.project.root if ctx.project else ""
            where = os.path.relpath(target.path, root) if root else target.path
            yield self.report(call, f"{ast.unparse(call.func)} -> {where}:{target.qualname} runs {runs}")


PROJECT = {
    "pyproject.toml": "",
    # three files: train -> models -> layers, relative and package imports
    "proj/__init__.py": "",
    "proj/layers.py": """
        def init_weights(m):
            pass
    """,
    "proj/models.py": """
        from .layers import init_weights
        class Net:
            def reset(self):
                init_weights(self)
    """,
    "proj/train.py": """
        from proj.models import Net
        from . import layers
        def main():
            net = Net()
            net.reset()
            layers.init_weights(net)
    """,
    # a script folder with a sibling import
    "scripts/fp16_util.py": """
        def zero_grad(params):
            clear(params)
        def clear(params):
            pass
    """,
    "scripts/train_gan.py": """
        from fp16_util import zero_grad
        zero_grad(params)
    """,
    # a cycle between two modules
    "cycle/a.py": """
        from cycle.b import pong
        def ping():
            pong()
    """,
    "cycle/b.py": """
        from cycle.a import ping
        def pong():
            ping()
    """,
    # a missing module and one outside the root
    "broken/uses_missing.py": """
        from not_a_module import f
        from ...outside import g
        f()
        g()
    """,
}


@pytest.fixture
def project_dir(tmp_path):
    write(tmp_path, PROJECT)
    (tmp_path.parent / "outside.py").write_text("def g(): pass\n")
    return tmp_path


def _targets(directory):
    return list(discover([str(directory)], config.find_settings))


def _answers(results):
    return {os.path.basename(r.path): ([f"{f.line}: {f.message}" for f in r.findings], r.dependencies) for r in results}


def test_directory_and_file_by_file_give_the_same_answers(project_dir, monkeypatch):
    monkeypatch.setattr(runner, "_rules_for", lambda codes: [CrossFileProbe])
    targets = _targets(project_dir)
    assert len(targets) >= 8  # enough files for two workers
    one_process = _answers(runner.lint_targets(targets, jobs=1))
    two_processes = _answers(runner.lint_targets(targets, jobs=2))
    # pre-commit passes only changed files: each one linted alone, in a fresh process state.
    one_by_one = _answers([result for t in targets for result in runner.lint_targets([t], jobs=1)])
    assert one_process == two_processes == one_by_one

    real = {rel: os.path.realpath(project_dir / rel) for rel in PROJECT}
    findings, deps = one_process["train.py"]
    # `Net()` builds a class and `net.reset()` calls a method of an object whose class this layer
    # does not infer; models.py was still read, to learn that Net is a class.
    assert findings == ["7: layers.init_weights -> proj/layers.py:init_weights runs []"]
    # The package folder is listed too: whether `proj.layers` still exists decides whether the script
    # can import at all (analysis/import_failure.py).
    package = os.path.realpath(project_dir / "proj")
    assert deps == tuple(sorted([package, *(real[f"proj/{name}.py"] for name in ("__init__", "layers", "models"))]))

    findings, deps = one_process["models.py"]
    assert findings == ["5: init_weights -> proj/layers.py:init_weights runs []"]
    assert deps == (real["proj/layers.py"],)

    findings, deps = one_process["train_gan.py"]
    assert findings == ["3: zero_grad -> scripts/fp16_util.py:zero_grad runs ['clear']"]
    assert deps == (real["scripts/fp16_util.py"],)

    assert one_process["a.py"][0] == ["4: pong -> cycle/b.py:pong runs ['ping', 'pong']"]
    assert one_process["b.py"][0] == ["4: ping -> cycle/a.py:ping runs ['ping', 'pong']"]
    assert one_process["uses_missing.py"] == ([], ())
    # A file no other file's lint needed still lists only what it consulted itself.
    assert one_process["layers.py"] == ([], ())


def test_standard_input_and_strings_have_no_project(project_dir):
    source = (project_dir / "scripts/train_gan.py").read_text()
    assert lint_source(source, str(project_dir / "scripts/train_gan.py"), [CrossFileProbe]) == []


def test_lint_file_alone_finds_the_project_as_the_command_does(project_dir):
    result = lint_file(str(project_dir / "scripts/train_gan.py"), [CrossFileProbe])
    assert [f.message for f in result.findings] == ["zero_grad -> scripts/fp16_util.py:zero_grad runs ['clear']"]
    assert result.dependencies == (os.path.realpath(project_dir / "scripts/fp16_util.py"),)
