"""analysis.argparse_flags: command-line flags that can only hold one value decide branches."""

import ast
import textwrap

import pytest

from torchlint.analysis.conditions import never_runs
from torchlint.analysis.context import FileContext

_SCRIPT = """
import argparse

def run(args):
    if args.{read}:
        use_average()
    else:
        use_live()

def main():
    parser = argparse.ArgumentParser()
    group = parser.add_argument_group("averaging")
    group.add_argument({declaration})
    args = parser.parse_args(){extra}
    run(args)
"""


def _dead_calls(read: str, declaration: str, extra: str = "") -> list[str]:
    source = textwrap.dedent(_SCRIPT.format(read=read, declaration=declaration, extra=extra))
    ctx = FileContext("t.py", source, ast.parse(source))
    return sorted(ast.unparse(c.func) for c in ctx.calls if never_runs(ctx, c))


@pytest.mark.parametrize(
    ("read", "declaration", "dead"),
    [
        ("use_ema", '"--use-ema", action="store_true", default=True', ["use_live"]),
        ("use_ema", '"-e", "--use-ema", default=True, action="store_true"', ["use_live"]),
        ("live", '"--no-average", dest="live", action="store_false", default=False', ["use_average"]),
        ("averaged", '"--averaged", action="store_false", default=False', ["use_average"]),
    ],
)
def test_a_flag_with_one_value_decides_the_branch(read, declaration, dead):
    assert _dead_calls(read, declaration) == dead


@pytest.mark.parametrize(
    ("read", "declaration", "extra"),
    [
        ("use_ema", '"--use-ema", action="store_true"', ""),  # False unless given
        ("use_ema", '"--use-ema", action="store_true", default=False', ""),
        ("use_ema", '"--use-ema", action="store_false", default=True', ""),
        ("use_ema", '"--use-ema", action="store_true", default=True', "\n    args.use_ema = False"),
        ("use_ema", '"--use-ema", action="store_true", default=True', '\n    setattr(args, "use_ema", False)'),
        ("use_ema", '"--use-ema", action="store_true", default=True', "\n    setattr(args, key, value)"),
        ("use_ema", '"--use-ema", action="store_true", default=True', "\n    args.__dict__.update(loaded)"),
        ("use_ema", '"--use-ema", action="store_true", default=True', "\n    vars(args)[key] = value"),
        ("use_ema", '"--use-ema", action="store_true", default=True', "\n    parser.set_defaults(use_ema=False)"),
        (
            "use_ema",
            '"--use-ema", action="store_true", default=True',
            '\n    parser.add_argument("--no-ema", dest="use_ema", action="store_false")',
        ),
        ("use_ema", '"--use-ema", action="store_true", default=True', "\n    args = load_config(args)"),
        ("use_ema", '"--use-ema", action="store_true", default=True', "\n    run(other)"),
        (
            "use_ema",
            '"--use-ema", action="store_true", default=True',
            "\n    args = parser.parse_args(namespace=saved)",
        ),
    ],
)
def test_a_flag_that_may_hold_another_value_decides_nothing(read, declaration, extra):
    assert _dead_calls(read, declaration, extra) == []


def test_logging_the_namespace_does_not_write_it():
    extra = "\n    print(vars(args))\n    json.dump(args.__dict__, handle)"
    assert _dead_calls("use_ema", '"--use-ema", action="store_true", default=True', extra) == ["use_live"]
