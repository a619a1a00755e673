"""analysis.conditions.never_runs: branches that constants decide against are dead."""

import ast
import textwrap

import pytest

from torchlint.analysis.conditions import never_runs
from torchlint.analysis.context import FileContext


def _dead_calls(source: str) -> list[str]:
    source = textwrap.dedent(source)
    ctx = FileContext("t.py", source, ast.parse(source))
    return sorted(ast.unparse(c.func) for c in ctx.calls if never_runs(ctx, c))


@pytest.mark.parametrize(
    ("test", "dead"),
    [
        ("world_size > 1", ["wrap"]),
        ("world_size >= 1", ["single"]),
        ("world_size < 2", ["single"]),
        ("world_size <= 0", ["wrap"]),
        ("world_size == 1", ["single"]),
    ],
)
def test_a_function_local_bound_once_to_a_literal_decides_orderings(test, dead):
    source = f"""
    def main():
        world_size = 1
        if {test}:
            wrap()
        else:
            single()
    """
    assert _dead_calls(source) == dead


def test_a_name_rebound_in_its_function_decides_nothing():
    source = """
    import os
    def main():
        world_size = 1
        if "WORLD_SIZE" in os.environ:
            world_size = int(os.environ["WORLD_SIZE"])
        if world_size > 1:
            wrap()
    """
    assert _dead_calls(source) == []


def test_a_name_declared_global_decides_nothing():
    source = """
    def configure():
        global world_size
        world_size = 1
        if world_size > 1:
            wrap()
    def launch():
        global world_size
        world_size = 4
    """
    assert _dead_calls(source) == []


def test_a_parameter_and_an_unorderable_value_decide_nothing():
    source = """
    def main(world_size):
        mode = None
        if world_size > 1:
            wrap()
        if mode > 1:
            other()
    """
    assert _dead_calls(source) == []
