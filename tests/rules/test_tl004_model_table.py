"""TL004 and a model constructor drawn from a table the file writes out (``ZOO[name]``, bound once
before the loop and called in it): when every entry builds a new model each call (a model class, a
function of the project that returns a module it constructs), each iteration that calls it, then
builds its optimizers, starts a run of its own (fresh_runs._calls_model_table). So do the models an
iteration builds in a list and hands out, one optimizer each, through a loop of its own body."""

import pytest
from expect_markers import check
from project_helpers import write

from torchlint.engine.lint import lint_file
from torchlint.engine.rule import all_rules

# The constructors and the training function live in other files of the project, as they do in
# real active-learning scripts.
_NETS = """
from torch import nn


class Classifier(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.body = nn.Linear(32, width)


def small_classifier(width=16, **extra):
    net = Classifier(width=width, **extra)
    return net
"""

_TRAINING = """
from torch import nn


def run_epoch(net, batches, opt):
    net.train()
    for x, y in batches:
        opt.zero_grad()
        nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
"""

_ACTIVE_LEARNING = """
import torch
from nets import Classifier, small_classifier
from training import run_epoch

ARCHITECTURES = {{"small": small_classifier, "base": Classifier}}


def acquire_labels(args, pool, labelled):
    build = ARCHITECTURES[args.arch]
{before}    while True:
{body}        for net, opt in zip(members, optimizers):
            run_epoch(net, labelled, opt)
        if len(labelled) >= args.budget:
            break
        labelled.extend(pick_uncertain(members, pool))
"""

_ENSEMBLE = """\
        members = [build(width=args.width).to(args.device) for _ in range(args.members)]
        optimizers = []
        for member in members:
            optimizers.append(torch.optim.Adam(member.parameters(), lr=1e-3)){marker}
"""

_SINGLE = """\
        members = [{model}]
        optimizers = [torch.optim.SGD(members[0].parameters(), lr=0.1, momentum=0.9)]{marker}
"""


@pytest.fixture
def lint(tmp_path):
    """Lint ``source`` as ``acquire.py`` of a project that holds the constructors and the training loop."""

    def run(source: str, *codes: str) -> list:
        write(tmp_path, {"nets.py": _NETS, "training.py": _TRAINING, "acquire.py": source})
        findings = lint_file(str(tmp_path / "acquire.py"), [all_rules()[c] for c in codes]).findings
        return sorted(findings, key=lambda f: (f.line, f.column))

    return run


def _script(body: str, before: str = "") -> str:
    return _ACTIVE_LEARNING.format(before=before, body=body)


def test_an_ensemble_built_fresh_each_round_from_the_table_is_a_run_per_round(lint):
    check(lint, _script(_ENSEMBLE.format(marker="")), "TL004")


def test_a_model_built_each_round_from_the_table_is_a_run_per_round(lint):
    source = _script(_SINGLE.format(model="build().to(args.device)", marker="").replace("members[0]", "model"))
    source = source.replace("        members = [build", "        model = build").replace(
        "to(args.device)]\n", "to(args.device)\n        members = [model]\n"
    )
    check(lint, source, "TL004")


def test_an_ensemble_of_models_built_before_the_loop_is_still_reported(lint):
    # The members outlive the round: a rebuilt optimizer throws away their Adam moments.
    before = "    first, second = build(), build()\n"
    body = _ENSEMBLE.format(marker="  # expect: TL004").replace(
        "[build(width=args.width).to(args.device) for _ in range(args.members)]", "[first, second]"
    )
    findings = check(lint, _script(body, before), "TL004")
    assert (
        "`torch.optim.Adam(...)` builds a new optimizer in every iteration of the loop at line 12 (`while True`)"
        in (findings[0].message)
    )


def test_a_table_with_an_entry_that_hands_back_a_kept_model_is_still_reported(lint):
    # One entry returns the same cached model every call: the table is not shown to build new ones.
    source = _script(_SINGLE.format(model="build()", marker="  # expect: TL004"))
    source = source.replace('"base": Classifier}', '"base": Classifier, "cached": lambda: CACHED_MODEL}')
    findings = check(lint, source, "TL004")
    assert "`torch.optim.SGD(...)` builds a new optimizer in every iteration" in findings[0].message
