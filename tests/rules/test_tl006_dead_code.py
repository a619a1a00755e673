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
