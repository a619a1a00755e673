"""torchlint.analysis.backedge: what a loop's next iteration still sees, and what it cannot repeat."""

import ast
import textwrap

import pytest

from torchlint.analysis.backedge import leaves_loop_after, rebound_every_iteration
from torchlint.analysis.context import FileContext


def _context(source):
    source = textwrap.dedent(source)
    return FileContext("t.py", source, ast.parse(source))


def _loop(ctx, line):
    return next(n for n in ctx.nodes(ast.For, ast.While) if n.lineno == line)


def _call(ctx, name):
    return next(c for c in ctx.calls if isinstance(c.func, ast.Name) and c.func.id == name)


@pytest.mark.parametrize(
    ("body", "rebound"),
    [
        ("acc = []\nacc.append(f())", True),
        ("for _ in range(k):\n    acc = f()\nacc += g()", True),  # an inner loop's body is taken to run
        ("with ctx():\n    acc = f()", True),
        ("acc += g()\nacc = 0", True),  # reset after the use: nothing is carried either
        ("acc = acc + f()", False),  # reads itself: that is the accumulation
        ("if c:\n    acc = f()", False),
        ("if c:\n    continue\nacc = f()", False),
        ("try:\n    pass\nexcept E:\n    acc = f()", False),
    ],
)
def test_rebound_every_iteration(body, rebound):
    source = "acc = 0\nfor x in xs:\n" + textwrap.indent(body, "    ") + "\n"
    ctx = _context(source)
    assert rebound_every_iteration(ctx, _loop(ctx, 2), "acc") is rebound


def test_rebinding_in_a_nested_function_does_not_count():
    ctx = _context(
        """
        acc = 0
        for x in xs:
            def reset():
                acc = []
            acc += x
        """
    )
    assert not rebound_every_iteration(ctx, _loop(ctx, 3), "acc")


@pytest.mark.parametrize(
    ("after", "leaves"),
    [
        ("break", True),
        ("return x", True),
        ("raise E()", True),
        ("log()", False),
        ("continue", False),
        ("done = True\nif done:\n    break", True),
        ("done = True\nif not done:\n    log()\nelse:\n    break", True),
        ("done = True\ndone = check()\nif done:\n    break", False),
        ("if c:\n    break\nelse:\n    return 1", True),
        ("if c:\n    break", False),
        ("for y in ys:\n    break", False),  # that break leaves the inner loop only
    ],
)
def test_leaves_loop_after(after, leaves):
    source = "while True:\n    x = load()\n    step()\n" + textwrap.indent(after, "    ") + "\n"
    ctx = _context(source)
    assert leaves_loop_after(ctx, _call(ctx, "step"), _loop(ctx, 1)) is leaves


def test_leaves_loop_after_from_inside_branches():
    ctx = _context(
        """
        while True:
            if ready():
                with timer():
                    if full():
                        step()
                        done = True
                if done:
                    break
            else:
                skip()
        """
    )
    assert leaves_loop_after(ctx, _call(ctx, "step"), _loop(ctx, 2))
    assert not leaves_loop_after(ctx, _call(ctx, "skip"), _loop(ctx, 2))


def test_step_inside_an_inner_loop_may_come_back():
    ctx = _context(
        """
        while True:
            for chunk in chunks:
                step()
            break
        """
    )
    assert not leaves_loop_after(ctx, _call(ctx, "step"), _loop(ctx, 2))
