"""analysis.reachability: the jump that ends a block after a statement, and what taking it passes over."""

import ast
import textwrap

from torchlint.analysis.context import FileContext
from torchlint.analysis.reachability import exit_after, jump_skips


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
