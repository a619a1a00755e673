"""analysis.reachability: the jump that ends a block after a statement, and what taking it passes over."""

import ast
import textwrap

from torchlint.analysis.context import FileContext
from torchlint.analysis.reachability import exit_after, jump_skips, statements_between


def _context(source: str) -> tuple[FileContext, dict[str, ast.Call]]:
    source = textwrap.dedent(source)
    ctx = FileContext("t.py", source, ast.parse(source))
    return ctx, {ast.unparse(call.func): call for call in ctx.calls}


def _skips(source: str, first: str, later: str):
    ctx, calls = _context(source)
    jump = exit_after(ctx, calls[first])
    return None if jump is None else jump_skips(ctx, jump, calls[later])


def test_continue_and_return_pass_over_the_rest_of_the_turn():
    loop = """
    for x in xs:
        if bad(x):
            drop(x)
            log(x)
            continue
        keep(x)
    """
    assert _skips(loop, "drop", "keep") is True
    function = """
    def f(x):
        if bad(x):
            drop(x)
            return None
        keep(x)
    """
    assert _skips(function, "drop", "keep") is True


def test_a_block_that_falls_through_has_no_exit():
    source = """
    for x in xs:
        if bad(x):
            drop(x)
        keep(x)
    """
    assert _skips(source, "drop", "keep") is None


def test_raise_does_not_count_as_it_may_be_caught_around_it():
    source = """
    for x in xs:
        try:
            drop(x)
            raise ValueError(x)
        except ValueError:
            pass
        keep(x)
    """
    assert _skips(source, "drop", "keep") is None


def test_break_of_an_inner_loop_reaches_what_follows_that_loop():
    source = """
    for x in xs:
        for y in x:
            drop(y)
            break
        keep(x)
    """
    assert _skips(source, "drop", "keep") is False


def test_a_finally_around_the_jump_still_runs():
    source = """
    def f(x):
        try:
            if bad(x):
                drop(x)
                return None
        finally:
            keep(x)
    """
    assert _skips(source, "drop", "keep") is False


def test_a_statement_in_another_function_is_not_passed_over():
    source = """
    def f(x):
        if bad(x):
            drop(x)
            return None
    def g(x):
        keep(x)
    """
    assert _skips(source, "drop", "keep") is False


def _between(source: str, first: str, last: str):
    ctx, calls = _context(source)
    found = statements_between(ctx, calls[first], calls[last])
    return None if found is None else [ast.unparse(stmt).splitlines()[0] for stmt in found]


def test_statements_between_a_statement_and_a_later_one_of_its_block():
    source = """
    def main():
        model = load()
        prepare()
        score(model)
        for b in data:
            check(b)
            run(model)
        later()
    """
    assert _between(source, "load", "score") == ["prepare()"]
    # Nested in a later statement: that statement runs around it (a loop brings it back).
    assert _between(source, "load", "run") == ["prepare()", "score(model)", "for b in data:"]
    assert _between(source, "score", "load") is None  # not later


def test_no_statements_between_from_a_branch_or_into_another_scope():
    source = """
    if c:
        model = load()
    def evaluate():
        return run(model)
    score(model)
    """
    assert _between(source, "load", "score") is None  # the load runs on one branch only
    flat = """
    model = load()
    def evaluate():
        return run(model)
    score(model)
    """
    assert _between(flat, "load", "score") == ["def evaluate():"]
    assert _between(flat, "load", "run") is None  # the def's body runs when it is called
