"""Mixed precision: a GradScaler's skipped steps are normal, a collapsing scale is TS113,
and with action="warn" nothing ever raises.  float16 autocast and GradScaler on the CPU."""

from __future__ import annotations

import warnings

import pytest

import torchlint

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, x):
        return self.body(x)


class NormHead(Classifier):
    """Adds the norm of its features, through sqrt at 0 for an all-zero sample: NaN in backward."""

    def forward(self, x):
        features = self.body(x) * (x.abs().sum(1, keepdim=True) > 0)
        return features + (features.float() ** 2).sum(1, keepdim=True).sqrt()  # norm-line


def amp_training(model, steps: int, init_scale: float = 2.0**24, zero_sample: bool = False):
    torch.manual_seed(0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale)
    scales = []
    for _ in range(steps):
        x, y = torch.randn(32, 16), torch.randint(0, 4, (32,))
        if zero_sample:
            x[0] = 0.0
        with torch.autocast("cpu", dtype=torch.float16):
            loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        scales.append(scaler.get_scale())
    return scales


def test_a_grad_scaler_run_with_overflow_steps_finishes_with_no_finding():
    torch.manual_seed(0)
    model = Classifier()
    before = [p.detach().clone() for p in model.parameters()]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # action="warn" must not even warn
        with torchlint.sanitize(summary=False, inplace="always") as report:
            scales = amp_training(model, steps=14)
    assert scales[0] < 2.0**24 and scales[-1] == scales[-2]  # it skipped overflow steps, then settled
    assert report.findings == [] and report.notes == []
    assert any(not torch.equal(a, p) for a, p in zip(before, model.parameters()))  # and it trained


def test_a_scale_that_keeps_collapsing_is_reported_and_the_op_pinned(mark):
    torch.manual_seed(0)
    model = NormHead()
    with pytest.warns(torchlint.SanitizerWarning):
        with torchlint.sanitize(summary=False) as report:  # action="warn": the run goes on
            scales = amp_training(model, steps=20, zero_sample=True)
    assert scales[-1] == 2.0**24 / 2**20  # every step skipped
    (collapse,) = report.by_code("TS113")
    assert collapse.name == "loss-scale-collapse"
    assert collapse.details["skipped_in_a_row"] == 16 and collapse.details["scale"] == 2.0**24 / 2**16
    assert report.by_code("TS111") == [] and report.by_code("TS112") == []  # skipped steps never reach them
    # TS113 escalates anomaly mode: the next backward pins the op that makes the NaN.
    (pinned,) = report.by_code("TS101")
    assert pinned.lineno == mark("norm-line") and pinned.details["first_seen_code"] == "TS113"


def test_the_collapse_threshold_is_an_option():
    torch.manual_seed(0)
    with torchlint.sanitize(summary=False, action="record", scale_collapse_steps=4) as report:
        amp_training(NormHead(), steps=5, zero_sample=True)
    assert report.by_code("TS113")[0].details["skipped_in_a_row"] == 4
    with torchlint.sanitize(summary=False, action="record", scale_collapse_steps=40) as report:
        amp_training(NormHead(), steps=20, zero_sample=True)
    assert report.by_code("TS113") == []


def test_a_scaler_that_skips_most_steps_is_reported_too():
    torch.manual_seed(0)
    model = NormHead()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**24)
    with torchlint.sanitize(summary=False, action="record") as report:
        for step in range(100):
            x, y = torch.randn(32, 16), torch.randint(0, 4, (32,))
            if step % 3:
                x[0] = 0.0  # two steps in three make NaN: never 16 skips in a row
            with torch.autocast("cpu", dtype=torch.float16):
                loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
    (finding,) = report.by_code("TS113")
    skipped = finding.details["skipped_recently"]
    assert 66 <= skipped < 75 and finding.details["skipped_in_a_row"] < 16  # 66 NaN steps, a few overflows
    assert f"skipped {skipped} of its last 100 optimizer steps" in finding.message
