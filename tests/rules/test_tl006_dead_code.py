"""TL006 and unreachable code: statements after an unconditional return/raise/continue/break never
run, so an evaluation there is no evaluation (analysis.reachability)."""

from expect_markers import check


def test_evaluation_disabled_by_an_early_return_is_silent(lint):
    # The author switched evaluation off by returning first; the loop below never runs.
    check(
        lint,
        """
        import torch

        class Tuner:
            def evaluate(self):
                return
                self.net.eval()
                hits = 0
                for images, labels in self.val_loader:
                    hits += (self.net(images).argmax(1) == labels).sum().item()
                print(hits)
                self.net.train()
        """,
        "TL006",
    )


def test_evaluation_after_a_raise_or_continue_is_silent(lint):
    check(
        lint,
        """
        import torch

        def evaluate(model, loader):
            raise NotImplementedError("evaluation is done by the server")
            model.eval()
            return [model(x) for x, _ in loader]

        def sweep(model, loaders):
            model.eval()
            for loader in loaders:
                continue
                for x, _ in loader:
                    print(model(x))
        """,
        "TL006",
    )


def test_evaluation_before_a_conditional_return_is_still_reported(lint):
    # Only an unconditional jump kills what follows; a guarded return leaves the loop live.
    findings = check(
        lint,
        """
        import torch

        def evaluate(model, loader, skip=False):
            if skip:
                return None
            model.eval()
            total = 0.0
            for x, y in loader:
                total += (model(x) - y).abs().sum().item()  # expect: TL006
            return total
        """,
        "TL006",
    )
    assert "`evaluate()`" in findings[0].message


# A fine-tuning script left with a debugging exit: the end-of-epoch evaluation is written after
# the step loop, whose first turn ends the process, or after an `exit()` in the epoch loop itself.
EVALUATION_AFTER_EXIT = """
import sys
import torch
from torch import nn

net = nn.Sequential(nn.Linear(16, 16), nn.Dropout(0.1), nn.Linear(16, 2))
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)

def validate():
    net.eval()
    hits = 0
    for inputs, targets in dev_batches:
        hits += (net(inputs).argmax(-1) == targets).sum().item(){marker}
    net.train()
    return hits

for epoch in range(3):
    for inputs, targets in train_batches:
        loss = nn.functional.cross_entropy(net(inputs), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
{stop}
    print(epoch, validate())
"""
REPORTED = "  # expect: TL006"


def test_an_evaluation_called_only_after_a_debugging_exit_is_silent(lint):
    for stop in ("        sys.exit(0)", "        torch.save(net.state_dict(), 'ckpt.pt')\n        exit()"):
        check(lint, EVALUATION_AFTER_EXIT.format(marker="", stop=stop), "TL006")
    # The exit in the epoch loop itself, before the call.
    check(lint, EVALUATION_AFTER_EXIT.format(marker="", stop="    quit()"), "TL006")


def test_an_evaluation_after_a_conditional_exit_is_still_reported(lint):
    for stop in ("", "        if debug_run:\n            sys.exit(0)", "        print(loss.item())"):
        findings = check(lint, EVALUATION_AFTER_EXIT.format(marker=REPORTED, stop=stop), "TL006")
        assert findings[0].code == "TL006" and findings[0].line == 13
        assert "`net(...)` evaluates with autograd on in `validate()`, called at line" in findings[0].message


def test_an_exit_of_the_files_own_making_ends_nothing(lint):
    # `exit` is a parameter of the function holding the loop: the builtin is not what runs.
    findings = check(
        lint,
        """
        import torch
        from torch import nn

        def validate(net, dev_batches):
            net.eval()
            hits = 0
            for inputs, targets in dev_batches:
                hits += (net(inputs).argmax(-1) == targets).sum().item()  # expect: TL006
            net.train()
            return hits

        def fit(net, optimizer, train_batches, dev_batches, exit):
            for epoch in range(3):
                for inputs, targets in train_batches:
                    nn.functional.cross_entropy(net(inputs), targets).backward()
                    optimizer.step()
                    exit()
                print(epoch, validate(net, dev_batches))
        """,
        "TL006",
    )
    assert findings[0].line == 9 and "called at line 19" in findings[0].message
