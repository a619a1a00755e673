"""analysis/unpacking.py: the keywords a call's ``**`` parts are shown to supply."""

import ast
import textwrap

from torchlint.analysis.context import FileContext
from torchlint.analysis.unpacking import call_keywords


def _keywords(source: str, callee: str = "step"):
    source = textwrap.dedent(source)
    ctx = FileContext("t.py", source, ast.parse(source))
    call = next(c for c in ctx.calls if isinstance(c.func, ast.Name) and c.func.id == callee)
    found = call_keywords(ctx, call)
    return {k: ast.unparse(v) for k, v in found.given.items()}, found.open


def test_a_local_dict_display_bound_once_supplies_its_keys():
    given, open_ = _keywords(
        """
        def evaluate(loader, model):
            common = {"model": model, "train": False, "optimizer": None}
            return step(loader, **common)
        """
    )
    assert given == {"model": "model", "train": "False", "optimizer": "None"}
    assert open_ is False


def test_a_dict_call_and_a_display_in_place_supply_their_keys_later_keys_winning():
    given, open_ = _keywords(
        """
        def evaluate(loader):
            opts = dict(train=True, lr=0.1)
            return step(loader, **opts, **{"train": False, "device": "cpu"})
        """
    )
    assert given == {"train": "False", "lr": "0.1", "device": "'cpu'"}
    assert open_ is False


def test_explicit_keywords_and_nested_unpacking():
    given, open_ = _keywords(
        """
        def evaluate(loader, extra):
            base = {"train": True}
            return step(loader, train=False, **{**base, "clip": 1.0})
        """
    )
    assert given == {"train": "False", "clip": "1.0"}
    assert open_ is False


def test_an_unknown_mapping_leaves_missing_keys_open():
    given, open_ = _keywords(
        """
        def evaluate(loader, extra):
            shown = {"train": False}
            return step(loader, **shown, **extra)
        """
    )
    assert given == {"train": "False"}
    assert open_ is True


def test_a_changed_rebound_or_escaping_dict_is_not_read():
    for change in [
        'opts["train"] = True',
        "opts.update(train=True)",
        "opts.pop('train')",
        "configure(opts)",
        "opts = {}",
        "del opts",
    ]:
        given, open_ = _keywords(
            f"""
            def evaluate(loader):
                opts = {{"train": False}}
                {change}
                return step(loader, **opts)
            """
        )
        assert (given, open_) == ({}, True), change


def test_a_dict_bound_in_a_branch_or_after_the_call_or_a_parameter_is_not_read():
    for body in [
        'if fast:\n        opts = {"train": False}\n    return step(loader, **opts)',
        'step(loader, **opts)\n    opts = {"train": False}',
    ]:
        source = "def evaluate(loader, fast, opts2):\n    " + body + "\n"
        assert _keywords(source) == ({}, True), body
    assert _keywords("def evaluate(loader, opts):\n    return step(loader, **opts)\n") == ({}, True)


def test_reads_that_leave_the_dict_as_it_is_keep_it():
    given, open_ = _keywords(
        """
        def evaluate(loader):
            opts = {"train": False}
            print(opts["train"], opts.get("lr"))
            return step(loader, **opts)
        """
    )
    assert (given, open_) == ({"train": "False"}, False)
