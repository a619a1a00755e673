"""Per-function summaries (analysis.summaries): computed once per run and function, shared across
files, never dependent on the order they are asked in, and remembering the files they read."""

from __future__ import annotations

import ast
import os
import pathlib
import textwrap

from project_helpers import REACH, reach, write

from torchlint.analysis import summaries as summaries_mod
from torchlint.analysis.context import FileContext
from torchlint.analysis.definitions import Definition
from torchlint.analysis.project import Projects
from torchlint.analysis.summaries import function_summary

KIND = REACH


def function(path, name, projects):
    source = pathlib.Path(path).read_text()
    ctx = FileContext(str(path), source, ast.parse(source), projects.for_file(str(path)))
    return Definition(ctx, next(n for n in ctx.nodes(ast.FunctionDef) if n.name == name))


CHAIN = {
    "pyproject.toml": "",
    "a.py": "from b import g\ndef f():\n    g()\n",
    "b.py": "from c import h\ndef g():\n    h()\n",
    "c.py": "def h():\n    pass\n",
    "train.py": "from a import f\ndef main():\n    f()\n",
}


def test_a_summary_is_computed_once_and_shared_across_files(tmp_path):
    write(tmp_path, CHAIN)
    projects = Projects()
    calls = []

    def counting(definition):
        calls.append(definition.qualname)
        return reach(definition)

    main = function(tmp_path / "train.py", "main", projects)
    assert function_summary(main, "count", counting, None) == {"f", "g", "h"}
    # From another file: the same project, so g's summary (computed for main) is reused.
    g = function(tmp_path / "b.py", "g", projects)
    assert function_summary(g, KIND, reach, frozenset()) == {"h"}
    assert function_summary(main, "count", counting, None) == {"f", "g", "h"}
    assert calls == ["main"]


def test_a_summary_lists_the_files_it_read_for_every_file_that_uses_it(tmp_path):
    write(tmp_path, CHAIN)
    projects = Projects()
    project = projects.for_file(str(tmp_path / "train.py"))
    real = {name: os.path.realpath(tmp_path / name) for name in ("a.py", "b.py", "c.py")}

    with project.recording(str(tmp_path / "b.py")) as first:
        function_summary(function(tmp_path / "b.py", "g", projects), KIND, reach, frozenset())
    assert first == {real["c.py"]}
    with project.recording(str(tmp_path / "train.py")) as second:
        function_summary(function(tmp_path / "train.py", "main", projects), KIND, reach, frozenset())
    # g's summary was cached while b.py was linted; train.py still depends on c.py through it.
    assert second == {real["a.py"], real["b.py"], real["c.py"]}


def test_recursion_gets_the_default_and_answers_do_not_depend_on_order(tmp_path):
    write(
        tmp_path,
        {
            "pyproject.toml": "",
            "ping.py": "from pong import pong\ndef ping():\n    pong()\n",
            "pong.py": "import ping as p\ndef pong():\n    p.ping()\n    leaf()\ndef leaf():\n    pass\n",
        },
    )

    def ask(order):
        projects = Projects()
        defs = {
            "ping": function(tmp_path / "ping.py", "ping", projects),
            "pong": function(tmp_path / "pong.py", "pong", projects),
        }
        return {name: function_summary(defs[name], KIND, reach, frozenset()) for name in order}

    first, second = ask(["ping", "pong"]), ask(["pong", "ping"])
    assert first == second
    assert first["ping"] == {"ping", "pong", "leaf"} and first["pong"] == {"ping", "pong", "leaf"}


def test_the_depth_bound_gives_the_default_and_is_not_cached(tmp_path, monkeypatch):
    monkeypatch.setattr(summaries_mod, "MAX_SUMMARY_DEPTH", 3)
    lines = ["def f5():\n    pass\n"]
    for i in range(5):
        lines.append(f"def f{i}():\n    f{i + 1}()\n")
    write(tmp_path, {"pyproject.toml": "", "chain.py": "".join(lines)})

    def answers(order):
        projects = Projects()
        return {n: function_summary(function(tmp_path / "chain.py", n, projects), KIND, reach, None) for n in order}

    deep_first = answers(["f0", "f2"])
    fresh = answers(["f2"])
    # Three summaries nest (f0's, f1's, f2's): f2 sees that it calls f3, not what f3 does. The
    # truncated summaries of f1 and f2 are not kept: f2 asked next sees to the end, as when asked alone.
    assert deep_first["f0"] == {"f1", "f2", "f3"}
    assert deep_first["f2"] == fresh["f2"] == {"f3", "f4", "f5"}


def test_without_a_project_summaries_belong_to_the_file():
    source = textwrap.dedent(
        """
        def a():
            b()
        def b():
            pass
        """
    )
    ctx = FileContext("<string>", source, ast.parse(source))
    a = Definition(ctx, ctx.functions["a"][0])
    assert function_summary(a, KIND, reach, frozenset()) == {"b"}
