"""Latency benchmarks (heldout26, pruning examples): a warm-up forward whose value is stored in a name
that nothing reads (``_ = model(x)``) evaluates nothing (TL006), and a helper whose input parameter
receives a tensor made from a shape at every call site of the file runs a probe, not an evaluation
(TL005 and TL006)."""

from expect_markers import check

# ----- TL006: a forward stored only in a dead name ---------------------------------------------------


def test_warm_up_forward_into_an_unread_name_is_silent(lint):
    # Real images, but the warm-up keeps nothing and the timed loop runs under no_grad.
    source = """
        import time
        import torch

        def evaluate_latency(model, loader, repeats=100):
            images, _ = next(iter(loader))
            model.eval()
            for step in range(10):
                warm = model(images)
            timings = []
            with torch.no_grad():
                for step in range(repeats):
                    start = time.perf_counter()
                    model(images)
                    timings.append(time.perf_counter() - start)
            return sum(timings) / repeats
        """
    assert lint(source, "TL006") == []


def test_forward_into_a_name_read_later_is_reported(lint):
    source = """
        import torch

        def evaluate(model, loader):
            model.eval()
            correct = 0
            for images, labels in loader:
                scores = model(images)  # expect: TL006
                correct += (scores.argmax(1) == labels).sum().item()
            return correct
        """
    findings = check(lint, source, "TL006")
    assert findings[0].message.startswith("`model(...)` evaluates with autograd on in `evaluate()`")


def test_forward_read_by_the_next_iteration_is_reported(lint):
    # `previous` is read above the store, by the iteration after it: the store is not dead.
    source = """
        import torch

        def evaluate_drift(model, loader):
            model.eval()
            previous = None
            changes = []
            for images, _ in loader:
                if previous is not None:
                    changes.append(previous.mean().item())
                previous = model(images)  # expect: TL006
            return changes
        """
    check(lint, source, "TL006")


# ----- TL005 / TL006: a parameter every call site fills with a synthetic tensor ---------------------

_BENCHMARK = """
    import torch
    import torch.nn as nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3)
            self.bn = nn.BatchNorm2d(8)

        def forward(self, x):
            return self.bn(self.conv(x))

    def evaluate(model, example, repeats=50):
        timings = []
        for step in range(repeats):
            out = model(example){marker}
            timings.append(out.shape[0])
        return timings

    def main(path, loader):
        model = Net()
        model.load_state_dict(torch.load(path))
        evaluate(model, torch.rand(8, 3, 32, 32))
        evaluate(model, {second})
"""


def test_helper_fed_synthetic_tensors_at_every_call_site_is_silent(lint):
    source = _BENCHMARK.format(marker="", second="torch.randn(16, 3, 32, 32).cuda()")
    assert lint(source, "TL005") == []
    assert lint(source, "TL006") == []


def test_helper_fed_real_data_at_one_call_site_is_reported(lint):
    source = _BENCHMARK.format(marker="  # expect: TL005, TL006", second="next(iter(loader))[0]")
    findings = check(lint, source, "TL005", "TL006")
    assert {f.code for f in findings} == {"TL005", "TL006"}
    assert findings[0].message.startswith("`model(...)` evaluates in training mode in `evaluate()`")


def test_trained_models_looped_over_on_a_grid_from_every_caller_are_reported(lint):
    # The grid is made from a shape, but the models iterated are the caller's trained ones.
    source = """
        import torch
        import torch.nn as nn

        def fit(x, y, count=4):
            models = []
            for k in range(count):
                model = nn.Sequential(nn.Linear(1, 32), nn.Dropout(0.1), nn.Linear(32, 1))
                optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
                for step in range(200):
                    loss = ((model(x) - y) ** 2).mean()
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                models.append(model)
            return models

        def predict_spread(models, grid):
            outputs = []
            for model in models:
                with torch.no_grad():
                    outputs.append(model(grid))  # expect: TL005
            return torch.stack(outputs).std(0)

        x = torch.linspace(-1, 1, 64).unsqueeze(1)
        members = fit(x, x.sin())
        print(predict_spread(members, torch.linspace(-3, 3, 256).unsqueeze(1)))
        """
    findings = check(lint, source, "TL005")
    assert findings[0].message.startswith("`model(...)` evaluates in training mode in `predict_spread()`")
