"""TL016 backward-under-no-grad: a backward pass where autograd is disabled."""

from expect_markers import check

CODE = "TL016"


def test_no_grad_function_calling_a_helper_that_runs_backward(lint):
    findings = check(
        lint,
        """
        import torch

        def optimize_step(model, optimizer, batch):
            loss = model(batch).mean()
            loss.backward()  # expect: TL016
            optimizer.step()
            optimizer.zero_grad()

        @torch.inference_mode()
        def adapt(model, optimizer, stream):
            for batch in stream:
                optimize_step(model, optimizer, batch)
        """,
        CODE,
    )
    message = findings[0].message
    assert "runs under `torch.inference_mode()` (line 10) (called from line 13)" in message


def test_set_grad_enabled_false_decorator_and_nested_helper(lint):
    check(
        lint,
        """
        import torch

        def _backward(loss):
            loss.backward()  # expect: TL016

        def step(model, x):
            _backward(model(x).sum())

        @torch.set_grad_enabled(False)
        def run(model, xs):
            for x in xs:
                step(model, x)
        """,
        CODE,
    )


def test_no_grad_function_whose_helper_enables_grad_again(lint):
    # Test-time adaptation and saliency: the helper turns autograd back on around its backward.
    check(
        lint,
        """
        import torch

        def saliency(model, x):
            with torch.enable_grad():
                x = x.clone().requires_grad_(True)
                model(x).max(1).values.sum().backward()
            return x.grad.abs()

        @torch.enable_grad()
        def adapt_step(model, optimizer, x):
            model(x).entropy().mean().backward()
            optimizer.step()

        @torch.no_grad()
        def explain(model, loader, optimizer):
            maps = [saliency(model, x) for x, _ in loader]
            for x, _ in loader:
                adapt_step(model, optimizer, x)
            return maps
        """,
        CODE,
    )


def test_no_grad_function_that_only_evaluates(lint):
    check(
        lint,
        """
        import torch

        def train_step(model, optimizer, x, y):
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()

        @torch.no_grad()
        def evaluate(model, loader):
            return sum((model(x).argmax(1) == y).sum().item() for x, y in loader)

        def fit(model, optimizer, loader):
            for x, y in loader:
                train_step(model, optimizer, x, y)
            return evaluate(model, loader)
        """,
        CODE,
    )
