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


# ----- calls that end the process ----------------------------------------------------------------
def _exits(source: str) -> list[int]:
    """The lines of the statements that end the process."""
    ctx, _ = _context(source)
    return sorted(stmt.lineno for stmt in ctx.process_exits)


def _live_calls(source: str) -> list[str]:
    return sorted(_context(source)[1])


def test_each_spelling_of_a_process_exit_ends_its_block():
    for setup, call in [
        ("", "exit()"),
        ("", "quit(1)"),
        ("import sys", "sys.exit(0)"),
        ("import sys as system", "system.exit('done')"),
        ("from sys import exit", "exit(2)"),
        ("from sys import exit as leave", "leave()"),
        ("import os", "os._exit(0)"),
        ("from os import _exit", "_exit(1)"),
    ]:
        source = f"""
        {setup}
        def train(model, loader):
            for batch in loader:
                step(model, batch)
                {call}
                after(model)
            wrap_up(model)
        """
        assert _exits(source) == [4, 6], (setup, call)  # the call, and the loop it ends
        assert _live_calls(source) == sorted(["step", call.split("(")[0]]), (setup, call)


def test_a_rebound_exit_name_ends_nothing():
    for binding, call in [
        ("def exit():\n    print('bye')", "exit()"),
        ("exit = print", "exit()"),
        ("with open(log) as quit:\n    pass", "quit()"),
        ("from tools import exit", "exit()"),
        ("from tools import *", "exit()"),
        ("import tools as sys", "sys.exit()"),
        ("import os", "os.exit()"),
    ]:
        source = f"{binding}\nfor batch in loader:\n    {call}\n    after(batch)\n"
        assert _exits(source) == [] and "after" in _live_calls(source), binding
    # A parameter named `exit` shadows the builtin inside (and, to be safe, throughout) the file.
    source = """
    def run(loader, exit):
        for batch in loader:
            exit()
            after(batch)
    """
    assert _exits(source) == [] and "after" in _live_calls(source)


def test_a_conditional_exit_does_not_end_what_follows():
    source = """
    import sys
    for batch in loader:
        step(batch)
        if debug:
            sys.exit(0)
        after(batch)
    wrap_up()
    """
    assert _exits(source) == [6]
    assert _live_calls(source) == ["after", "step", "sys.exit", "wrap_up"]


def test_a_loop_with_its_own_break_or_continue_is_not_ended_by_an_exit_in_it():
    for jump in ("break", "continue"):
        source = f"""
        for batch in loader:
            if batch is None:
                {jump}
            step(batch)
            exit()
        wrap_up()
        """
        assert _exits(source) == [6], jump
        assert "wrap_up" in _live_calls(source), jump
    # A `break` of an inner loop is the inner loop's own.
    source = """
    for batch in loader:
        for part in batch:
            if part is None:
                break
        exit()
    wrap_up()
    """
    assert _exits(source) == [2, 6] and "wrap_up" not in _live_calls(source)


def test_an_if_whose_both_branches_exit_ends_its_block():
    source = """
    import sys
    if ok:
        sys.exit(0)
    else:
        sys.exit(1)
    after()
    """
    assert _exits(source) == [3, 4, 6]
    assert "after" not in _live_calls(source)


def test_a_try_around_an_exit_may_go_on_after_it():
    source = """
    import sys
    try:
        sys.exit(main())
        unreachable()
    except SystemExit:
        pass
    after()
    """
    assert _exits(source) == [4]
    assert _live_calls(source) == ["after", "main", "sys.exit"]


def test_an_exit_is_no_jump_that_surely_passes_over_a_later_statement():
    # Like `raise`: `exit_after` names only return/continue/break.
    source = """
    for x in xs:
        if bad(x):
            drop(x)
            exit(1)
        keep(x)
    """
    assert _skips(source, "drop", "keep") is None


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
