"""torchlint.analysis.backedge: what a loop's next iteration still sees, and what it cannot repeat."""

import ast
import textwrap

import pytest

from torchlint.analysis.backedge import leaves_loop_after, rebound_around
from torchlint.analysis.context import FileContext


def _context(source):
    source = textwrap.dedent(source)
    return FileContext("t.py", source, ast.parse(source))


def _loop(ctx, line):
    return next(n for n in ctx.nodes(ast.For, ast.While) if n.lineno == line)


def _call(ctx, name):
    return next(c for c in ctx.calls if isinstance(c.func, ast.Name) and c.func.id == name)


def _accumulation(ctx):
    return next(n for n in ctx.nodes(ast.AugAssign))


@pytest.mark.parametrize(
    ("body", "rebound"),
    [
        ("acc = []\nacc += f()", True),
        ("for _ in range(k):\n    acc = f()\nacc += g()", True),  # an inner loop's body is taken to run
        ("with ctx():\n    acc = f()\nacc += g()", True),
        ("acc += g()\nacc = 0", True),  # reset after the use: nothing is carried either
        ("acc = acc + f()\nacc += g()", False),  # reads itself: that is the accumulation
        ("if c:\n    acc = f()\nacc += g()", False),
        ("if c:\n    acc = f()\nelse:\n    acc = h()\nacc += g()", True),
        # A continue before the rebinding skips the accumulation too: each path reaching it rebinds.
        ("if c:\n    continue\nacc = f()\nacc += g()", True),
        ("if c:\n    break\nacc = f()\nacc += g()", True),
        # ... but after the accumulation it carries the total round the back edge unchanged.
        ("acc += g()\nif c:\n    continue\nacc = 0", False),
        ("acc += g()\nif c:\n    break\nacc = 0", True),  # a break leaves the loop instead
        ("acc += g()\nfor y in ys:\n    if c:\n        continue\n    acc = 0", False),
        ("acc += g()\nfor y in ys:\n    acc = 0\n    if c:\n        continue", True),
        ("try:\n    pass\nexcept E:\n    acc = f()\nacc += g()", False),
        ("acc += g()\nacc_other = 0", False),
    ],
)
def test_rebound_around(body, rebound):
    source = "acc = 0\nfor x in xs:\n" + textwrap.indent(body, "    ") + "\n"
    ctx = _context(source)
    assert rebound_around(ctx, _loop(ctx, 2), _accumulation(ctx), "acc") is rebound


@pytest.mark.parametrize(
    ("body", "rebound"),
    [
        # Only the iterations on which `c` holds are asked about: the other branch is not followed.
        ("acc += g()\nif c:\n    acc = 0", True),
        ("acc += g()\nif not c:\n    pass\nelse:\n    acc = 0", True),
        ("if c:\n    acc = 0\nacc += g()", True),
        ("acc += g()\nif d:\n    acc = 0", False),  # a test the caller knows nothing of
        ("acc += g()\nif c:\n    if d:\n        acc = 0", False),
        ("acc += g()\nif c:\n    if e:\n        continue\n    acc = 0", False),
    ],
)
def test_rebound_around_on_the_iterations_where_a_test_holds(body, rebound):
    source = "acc = 0\nfor x in xs:\n" + textwrap.indent(body, "    ") + "\n"
    ctx = _context(source)

    def given(test):
        if isinstance(test, ast.Name) and test.id == "c":
            return True
        if isinstance(test, ast.UnaryOp) and isinstance(test.operand, ast.Name) and test.operand.id == "c":
            return False
        return None

    loop, node = _loop(ctx, 2), _accumulation(ctx)
    assert rebound_around(ctx, loop, node, "acc", given=given) is rebound
    if rebound:
        assert not rebound_around(ctx, loop, node, "acc")  # every path: the other branch carries it round


def test_rebinding_before_an_accumulation_in_an_inner_loop():
    ctx = _context(
        """
        for epoch in range(n):
            for x in xs:
                if skip(x):
                    continue
                acc = f(x)
                acc += g(x)
        """
    )
    node = _accumulation(ctx)
    assert rebound_around(ctx, _loop(ctx, 2), node, "acc")
    assert rebound_around(ctx, _loop(ctx, 3), node, "acc")


def test_rebinding_in_an_inner_loop_before_it_does_not_dominate_when_it_may_continue():
    ctx = _context(
        """
        for x in xs:
            for y in ys:
                if c:
                    continue
                acc = f()
            acc += g()
        """
    )
    assert not rebound_around(ctx, _loop(ctx, 2), _accumulation(ctx), "acc")


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
    assert not rebound_around(ctx, _loop(ctx, 3), _accumulation(ctx), "acc")


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
