"""TS101: the forward line of a failing backward and of the op whose backward makes NaN,
with anomaly="auto" (cheap recording, escalation) and "full", against torch's own anomaly mode.

Every case trains a real small model on the CPU; the reference line is the one
``torch.autograd.detect_anomaly(check_nan=True)`` itself prints for the same run.
"""

from __future__ import annotations

import traceback
import warnings

import pytest

import torchlint
from torchlint.sanitizer.locations import user_frames_from_traceback

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional


def torch_anomaly_line(run) -> int:
    """The user line torch's full anomaly mode (check_nan=True) names for ``run()``'s failure."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.autograd.detect_anomaly(check_nan=True):
            with pytest.raises((RuntimeError, ValueError)):
                run()
    (trace,) = [str(w.message) for w in caught if "Traceback of forward call" in str(w.message)]
    return user_frames_from_traceback(trace)[-1][0].lineno


def sanitized(run, **options):
    """``run()`` under the sanitizer; returns the report and the exception it ended with (or None)."""
    error = None
    with torchlint.sanitize(summary=False, action="record", **options) as report:
        try:
            run()
        except Exception as exc:
            error = exc
    return report, error


# -- the models ---------------------------------------------------------------------------------
class Distances(nn.Module):
    """Norms of projected points, computed "safely" with torch.where: zero rows make sqrt(0),
    whose derivative is infinite, and 0 * inf is NaN in backward although forward is finite."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        v = self.proj(x) * (x.abs().sum(1, keepdim=True) > 0)
        squared = (v * v).sum(1)
        return torch.where(squared > 0, squared.sqrt(), torch.zeros_like(squared))  # sqrt-line


class SafeLogLikelihood(nn.Module):
    """log of probabilities that underflow to 0, masked out forward but not in backward."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        p = (self.fc(x) * 60).softmax(-1)
        return torch.where(p > 0, p.log(), torch.zeros_like(p))  # log-line


def points(step: int, zero_from: int):
    generator = torch.Generator().manual_seed(step)
    x = torch.randn(8, 4, generator=generator)
    if step >= zero_from:
        x[0] = 0.0  # a duplicate point: distance 0
    return x


def fit_distances(steps: int, zero_from: int):
    torch.manual_seed(0)
    model = Distances()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def run():
        for step in range(1, steps + 1):
            optimizer.zero_grad()
            loss = F.mse_loss(model(points(step, zero_from)), torch.ones(8))
            loss.backward()
            optimizer.step()

    return run


def fit_log_likelihood(steps: int):
    torch.manual_seed(0)
    model = SafeLogLikelihood()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    target = F.one_hot(torch.tensor([0, 1, 2, 0, 1, 2]), 3).float()

    def run():
        for step in range(steps):
            x = torch.randn(6, 4, generator=torch.Generator().manual_seed(step)) * 3
            optimizer.zero_grad()
            loss = -(model(x) * target).sum() / 6
            loss.backward()
            optimizer.step()

    return run


class RaisesInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("custom backward failed")


def fit_with_custom_function():
    torch.manual_seed(0)
    model = nn.Linear(4, 2)

    def run():
        out = RaisesInBackward.apply(model(torch.randn(3, 4)))  # custom-line
        out.sum().backward()

    return run


def fit_with_inplace_write():
    torch.manual_seed(0)
    model = nn.Linear(4, 2)

    def run():
        hidden = torch.sigmoid(model(torch.randn(3, 4)))  # saving-op-line
        hidden.mul_(2)  # the write (TS105 names it when the in-place check is on)
        hidden.sum().backward()

    return run


# -- a backward that raises: the failing node's forward line, as full anomaly mode names it -------
@pytest.mark.parametrize(
    "make,marker", [(fit_with_custom_function, "custom-line"), (fit_with_inplace_write, "saving-op-line")]
)
@pytest.mark.parametrize("anomaly", ["auto", "full"])
def test_a_failing_backward_names_the_line_full_anomaly_mode_names(make, marker, anomaly, mark):
    expected = torch_anomaly_line(make())
    assert expected == mark(marker)
    report, error = sanitized(make(), anomaly=anomaly)
    (finding,) = report.by_code("TS101")
    assert (finding.filename, finding.lineno) == (__file__, expected)
    assert "backward failed in" in finding.message and finding.details["forward_stack"]
    # The user's own error comes out, with the forward line attached.
    assert type(error) is (ValueError if make is fit_with_custom_function else RuntimeError)
    assert any(f":{expected}: TS101" in note for note in getattr(error, "__notes__", []))


def test_with_action_raise_the_error_raised_is_the_users(mark):
    with pytest.raises(ValueError, match="custom backward failed") as info:
        with torchlint.sanitize(summary=False, action="raise"):
            fit_with_custom_function()()
    assert f":{mark('custom-line')}: TS101" in info.value.__notes__[0]


def test_a_shape_error_from_a_custom_function_is_found_in_the_graph(mark):
    class WrongShape(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum(1)

        @staticmethod
        def backward(ctx, grad):
            return grad  # should be expanded to the input's shape

    x = torch.randn(3, 4, requires_grad=True)
    report, error = sanitized(lambda: WrongShape.apply(x * 2).sum().backward())  # shape-line
    (finding,) = report.by_code("TS101")
    assert finding.lineno == mark("shape-line") and "WrongShapeBackward" in finding.message
    assert "invalid gradient" in str(error)


# -- NaN made in backward: pinned by the escalation (auto) or at once (full) -----------------------
NAN_CASES = [
    (lambda: fit_distances(steps=4, zero_from=1), "sqrt-line", 1),
    (lambda: fit_log_likelihood(steps=4), "log-line", 1),
    (lambda: fit_distances(steps=33, zero_from=30), "sqrt-line", 30),  # appears only at step 30
]


@pytest.mark.parametrize("make,marker,first", NAN_CASES)
def test_nan_made_in_backward_is_pinned_at_the_line_full_anomaly_mode_names(make, marker, first, mark):
    assert torch_anomaly_line(make()) == mark(marker)
    full, error = sanitized(make(), anomaly="full")
    assert error is None  # action="record" (and "warn"): the run goes on
    (pinned,) = full.by_code("TS101")
    assert pinned.lineno == mark(marker) and pinned.details["backward_pass"] == first
    assert "produced NaN/Inf from finite gradients" in pinned.message

    auto, error = sanitized(make())
    assert error is None
    (finding,) = auto.by_code("TS101")
    assert (finding.filename, finding.lineno) == (__file__, mark(marker))
    assert finding.details["node"] == pinned.details["node"]
    # pinned one step after the first non-finite gradients (TS111 at that step), and it says so
    assert finding.details["pinned_later"] and finding.details["first_backward_pass"] == first
    assert finding.details["backward_pass"] == first + 1
    assert "after the first non-finite gradients (TS111" in finding.message
    # both the cheap line and, from the escalated steps, torch's full forward stack
    assert len(finding.details["forward_stack"]) > 1
    assert auto.by_code("TS111")[0].details["nan"]


def test_a_nan_run_with_action_warn_finishes_with_warnings():
    with pytest.warns(torchlint.SanitizerWarning) as caught:
        with torchlint.sanitize(summary=False) as report:
            fit_distances(steps=4, zero_from=1)()
    assert {"TS101", "TS111"} <= report.codes()
    assert {w.message.finding.code for w in caught} >= {"TS101", "TS111"}


def test_escalation_gives_up_when_the_loss_itself_is_non_finite():
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def run():
        for _ in range(6):
            optimizer.zero_grad()
            out = model(torch.randn(5, 4))
            loss = (out - out.detach()).abs().sqrt().mean()  # sqrt(0) every step: NaN grads from step 1
            loss = loss + model.weight.sum() * 0  # the NaN weights make every later loss NaN
            loss.backward()
            optimizer.step()

    report, error = sanitized(run, anomaly_escalation=3)
    assert error is None and report.by_code("TS101") == []
    (note,) = [n for n in report.notes if n.startswith("TS101 could not pin")]
    assert "non-finite loss" in note and "anomaly='full'" in note


def test_escalation_costs_nothing_on_a_clean_run(net, batches):
    session = torchlint.sanitize(summary=False, action="record")
    with session as report:
        check = next(c for c in session.checks if type(c).__name__ == "AnomalyCheck")
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        for x, y in batches:
            optimizer.zero_grad()
            loss = F.cross_entropy(net(x), y)
            # one recorded line per node: the cheap recorder, not torch's full stack
            assert len(loss.grad_fn.metadata["traceback_"]) == 1
            loss.backward()
            optimizer.step()
        assert check.escalation is None and check.backward_passes == len(batches)
    assert report.findings == []


def test_check_nan_off_and_anomaly_off():
    x = torch.tensor([0.0, 4.0], requires_grad=True)
    with torchlint.sanitize(summary=False, action="record", anomaly="full", check_nan=False) as report:
        assert torch.is_anomaly_enabled() and not torch.is_anomaly_check_nan_enabled()
        x.sqrt().sum().backward()  # NaN gradient, but not asked to look for it
    assert report.by_code("TS101") == []
    with torchlint.sanitize(summary=False, anomaly=False):
        assert not torch.is_anomaly_enabled()
    with pytest.raises(ValueError, match="anomaly='sometimes'"):
        torchlint.sanitize(anomaly="sometimes")
    assert torchlint.sanitize(anomaly=True).options.anomaly == "full"  # the old boolean spelling


def test_other_backward_warnings_are_replayed():
    x = torch.randn(3, requires_grad=True)

    def warn_in_backward(grad):
        warnings.warn("custom backward warning", UserWarning)
        return grad

    with torchlint.sanitize(summary=False, action="record"):
        y = x * 2
        y.register_hook(warn_in_backward)
        with pytest.warns(UserWarning, match="custom backward warning"):
            y.sum().backward()


def test_action_raise_stops_at_a_nan_made_in_backward_after_the_backward(mark):
    torch.manual_seed(0)
    model = Distances()
    x = points(1, zero_from=1)
    with pytest.raises(torchlint.SanitizerError) as info:
        with torchlint.sanitize(summary=False, action="raise", anomaly="full"):
            F.mse_loss(model(x), torch.ones(8)).backward()  # raise-backward-line
    assert info.value.finding.code == "TS101" and info.value.finding.lineno == mark("sqrt-line")
    assert model.proj.weight.grad is not None  # the backward itself ran to its end, as in plain Python
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    assert last.lineno == mark("raise-backward-line")
