"""TL004 and a default built under ``if optimizer is None:``: on a call that passes an optimizer,
the branch is not taken, so no optimizer is built there (phases.runs_when_called)."""

from expect_markers import check

_EPOCH = """
import torch

def train_one_epoch(model, loader, optimizer=None):
    if optimizer is None:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9){marker}
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
"""


def test_default_optimizer_not_built_when_the_epoch_loop_passes_one(lint):
    check(
        lint,
        _EPOCH.format(marker="")
        + """
def main(model, loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for epoch in range(90):
        train_one_epoch(model, loader, optimizer)
""",
        "TL004",
    )


def test_default_optimizer_built_on_every_call_of_the_loop_is_still_reported(lint):
    # The loop passes nothing: the default branch runs every epoch.
    findings = check(
        lint,
        _EPOCH.format(marker="  # expect: TL004")
        + """
def main(model, loader):
    for epoch in range(90):
        train_one_epoch(model, loader)
""",
        "TL004",
    )
    assert "loop at line 14 (`for epoch in range(90)`), through the call at line 15" in findings[0].message


def test_an_argument_that_may_be_none_keeps_the_default_branch_live(lint):
    # `pick_optimizer` may return None: the argument is not shown to hold an object.
    check(
        lint,
        _EPOCH.format(marker="  # expect: TL004")
        + """
def main(model, loader, cfg):
    for epoch in range(90):
        optimizer = pick_optimizer(cfg)
        train_one_epoch(model, loader, optimizer)
""",
        "TL004",
    )
