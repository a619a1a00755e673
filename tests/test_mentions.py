"""torchlint.analysis.mentions: which scopes of a file may run which, by mentions."""

import ast
import textwrap

from torchlint.analysis.context import FileContext
from torchlint.analysis.mentions import mentions

SOURCE = """
def setup():
    start()

def worker(rank):
    setup()
    Trainer().fit()

class Trainer:
    def __init__(self):
        pass
    def fit(self):
        helper()

def helper():
    pass

def section():
    helper()

def start():
    pass

section()
"""


def _setup():
    source = textwrap.dedent(SOURCE)
    ctx = FileContext("t.py", source, ast.parse(source))
    functions = {f.name: f for f in ctx.nodes(ast.FunctionDef)}
    return ctx, mentions(ctx), functions


def _names(ctx, scopes):
    return {"<module>" if s is ctx.tree else s.name for s in scopes}


def test_scopes_running_follow_mentions_up_to_module_level_code():
    ctx, found, functions = _setup()
    start_call = next(c for c in ctx.nodes(ast.Call) if getattr(c.func, "id", None) == "start")
    assert _names(ctx, found.scopes_running([start_call])) == {"setup", "worker"}
    helper_call = next(c for c in ctx.nodes(ast.Call) if getattr(c.func, "id", None) == "helper")
    # `fit` is mentioned by `worker` as an attribute; `section` by module-level code.
    assert _names(ctx, found.scopes_running([helper_call])) == {"fit", "worker"}


def test_scopes_run_by_follow_mentions_down_through_classes():
    ctx, found, functions = _setup()
    assert _names(ctx, found.scopes_run_by([functions["worker"]])) == {
        "worker",
        "setup",
        "start",
        "__init__",
        "fit",
        "helper",
    }


def test_mentioned():
    ctx, found, functions = _setup()
    assert found.mentioned(functions["section"]) and found.mentioned(functions["__init__"])
    assert not found.mentioned(functions["worker"])
