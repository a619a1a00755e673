"""TS106 grads-not-cleared, TS111 nonfinite-grad, TS112 optimizer-not-stepped:
small real models trained on the CPU, each bug next to its fixed twin."""

import gc
import math

import pytest

torch = pytest.importorskip("torch")
from _training_helpers import one_thread, sanitized  # noqa: E402,F401  (one_thread is an autouse fixture)
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

import torchlint  # noqa: E402


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


def data(n=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 8, generator=g), torch.randint(0, 3, (n,), generator=g)


def codes(report, *wanted):
    return [f for f in report.findings if f.code in wanted]


def line_of(fragment, func):
    """Line number of the first source line of ``func`` containing ``fragment``."""
    import inspect

    lines, start = inspect.getsourcelines(func)
    for offset, text in enumerate(lines):
        if fragment in text:
            return start + offset
    raise AssertionError(f"{fragment!r} not in {func.__name__}")


# ---------------------------------------------------------------------------
# TS106 grads-not-cleared
# ---------------------------------------------------------------------------
def never_cleared():
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = data()
    for _ in range(6):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()  # TS106 here


def test_ts106_never_cleared_is_reported_at_the_step():
    report = sanitized(never_cleared)
    (finding,) = codes(report, "TS106")
    assert finding.name == "grads-not-cleared"
    assert finding.lineno == line_of("opt.step()", never_cleared)
    assert "model.body.weight" in finding.message and "model.head.bias" in finding.message
    assert "opt.zero_grad()" in finding.message and "TL001" in finding.message
    # Steps 1 and 2 cannot be proven stale (the second only raises the suspicion).
    assert finding.count == 4


@pytest.mark.parametrize(
    "clear",
    ["opt_none", "opt_zero", "model_zero", "grad_none", "grad_data_zero", "before_backward"],
)
def test_ts106_every_way_of_clearing_is_accepted(clear):
    def train():
        torch.manual_seed(0)
        model = Net()
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        x, y = data()
        for _ in range(6):
            if clear == "before_backward":
                opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # in-place on .grad
            opt.step()
            if clear == "opt_none":
                opt.zero_grad(set_to_none=True)
            elif clear == "opt_zero":
                opt.zero_grad(set_to_none=False)
            elif clear == "model_zero":
                model.zero_grad()
            elif clear == "grad_none":
                for p in model.parameters():
                    p.grad = None
            elif clear == "grad_data_zero":  # bypasses the version counter
                for p in model.parameters():
                    p.grad.data.zero_()

    assert codes(sanitized(train), "TS106") == []


def accumulate(clear_after_step):
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = data(64)
    opt.zero_grad()
    for i in range(16):
        xb, yb = x[i % 4 * 16 : i % 4 * 16 + 16], y[i % 4 * 16 : i % 4 * 16 + 16]
        (F.cross_entropy(model(xb), yb) / 4).backward()
        if i % 4 == 3:
            opt.step()
            if clear_after_step:
                opt.zero_grad()


def test_ts106_deliberate_accumulation_is_not_a_finding():
    report = sanitized(lambda: accumulate(clear_after_step=True))
    assert codes(report, "TS106", "TS112") == []


def test_ts106_accumulation_never_cleared_after_the_step():
    report = sanitized(lambda: accumulate(clear_after_step=False))
    (finding,) = codes(report, "TS106")
    assert "model.body.weight" in finding.message
    assert finding.lineno == line_of("opt.step()", accumulate)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8))

    def forward(self, z):
        return self.net(z)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))

    def forward(self, x):
        return self.net(x)


def gan(clear_d=True, steps=6):
    """The usual two-optimizer loop: D's loss on real and detached fakes, then
    G's loss through D (which also fills D's gradients, cleared next round)."""
    torch.manual_seed(0)
    netG, netD = Generator(), Discriminator()
    optG = torch.optim.Adam(netG.parameters(), lr=1e-3)
    optD = torch.optim.Adam(netD.parameters(), lr=1e-3)
    real = torch.randn(16, 8)
    ones, zeros = torch.ones(16, 1), torch.zeros(16, 1)
    for _ in range(steps):
        if clear_d:
            netD.zero_grad()
        fake = netG(torch.randn(16, 4))
        F.binary_cross_entropy_with_logits(netD(real), ones).backward()
        F.binary_cross_entropy_with_logits(netD(fake.detach()), zeros).backward()
        optD.step()
        netG.zero_grad()
        F.binary_cross_entropy_with_logits(netD(fake), ones).backward()
        optG.step()


def test_ts106_gan_with_two_optimizers_is_clean():
    report = sanitized(gan)
    assert report.findings == []


def test_ts106_gan_discriminator_never_cleared_names_only_its_parameters():
    report = sanitized(lambda: gan(clear_d=False))
    (finding,) = codes(report, "TS106")
    assert finding.lineno == line_of("optD.step()", gan)
    assert "netD.net.0.weight" in finding.message
    assert "netG" not in finding.message
    assert finding.message.startswith("optD.step()")


def lbfgs(zero_in_closure):
    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=5)
    x = torch.randn(32, 8)
    y = x.sum(1, keepdim=True)

    def closure():
        if zero_in_closure:
            opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        return loss

    for _ in range(4):
        opt.step(closure)
    return model


def test_ts106_lbfgs_closure_that_clears_is_clean():
    report = sanitized(lambda: lbfgs(zero_in_closure=True))
    assert report.findings == []


def test_ts106_lbfgs_closure_without_zero_grad():
    report = sanitized(lambda: lbfgs(zero_in_closure=False))
    (finding,) = codes(report, "TS106")
    assert finding.lineno == line_of("opt.step(closure)", lbfgs)
    assert "model.weight" in finding.message and "model.bias" in finding.message
    assert "closure" in finding.message and "zero_grad()" in finding.message


def amp_training(poison=False, steps=6):
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler("cpu")
    x, y = data()
    if poison:
        x[0, 0] = float("nan")
    for _ in range(steps):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()


def test_grad_scaler_on_cpu_is_clean():
    report = sanitized(amp_training)
    assert codes(report, "TS106", "TS107", "TS108", "TS109", "TS110", "TS111", "TS112") == []


# ---------------------------------------------------------------------------
# TS111 nonfinite-grad
# ---------------------------------------------------------------------------
def nan_batch():
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = data()
    for i in range(4):
        xb = x.clone()
        if i == 2:
            xb[3, 1] = float("nan")
        opt.zero_grad()
        F.cross_entropy(model(xb), y).backward()
        opt.step()


def test_ts111_nan_gradients_are_named_at_the_step():
    report = sanitized(nan_batch, nonfinite=False)
    (finding,) = codes(report, "TS111")
    assert finding.name == "nonfinite-grad"
    assert finding.lineno == line_of("opt.step()", nan_batch)
    assert "NaN" in finding.message
    # One NaN input row poisons every gradient of the model.
    assert set(finding.details["nan"]) == {
        "model.body.weight",
        "model.body.bias",
        "model.head.weight",
        "model.head.bias",
    }
    # The NaN update poisoned the weights; the last step's NaN gradients follow from that
    # update, not from a new cause: one event, counted once.
    assert finding.count == 1


def edited_grads(edit):
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    x, y = data()
    for _ in range(2):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        edit(model)
        opt.step()


def test_ts111_inf_gradient_is_told_apart_from_nan():
    def edit(model):
        model.head.bias.grad[0] = float("inf")

    (finding,) = codes(sanitized(lambda: edited_grads(edit)), "TS111")
    assert finding.details == {"optimizer": "opt", "nan": [], "inf": ["model.head.bias"]}
    assert "got Inf gradients in 1 parameter: model.head.bias." in finding.message


def test_ts111_huge_but_finite_gradients_are_not_called_nonfinite():
    def edit(model):
        for p in model.parameters():
            p.grad.fill_(1e20)  # the squared norm overflows float32

    assert codes(sanitized(lambda: edited_grads(edit)), "TS111") == []


def exploding(spike):
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=1e-9)  # keep the weights ~ constant
    x, y = data()
    for i in range(12):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        if i == 9:
            loss = loss * spike
        loss.backward()
        opt.step()


def test_ts111_gradient_norm_explosion():
    report = sanitized(lambda: exploding(1e5))
    (finding,) = codes(report, "TS111")
    assert "exploding" in finding.message
    assert finding.details["total_norm"] > 1e3 * finding.details["median_norm"]
    assert finding.lineno == line_of("opt.step()", exploding)


def test_ts111_moderate_jump_and_factor_option():
    assert codes(sanitized(lambda: exploding(50.0)), "TS111") == []
    assert len(codes(sanitized(lambda: exploding(50.0), grad_explosion_factor=10), "TS111")) == 1


def test_ts111_healthy_training_is_clean():
    assert codes(sanitized(lambda: exploding(1.0)), "TS111") == []


# ---------------------------------------------------------------------------
# TS112 optimizer-not-stepped
# ---------------------------------------------------------------------------
def step_never_taken(iterations=30, clear_every_iteration=True):
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = data()
    for i in range(iterations):
        if clear_every_iteration:
            opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        if i % 100 == 99:  # never true in this run
            opt.step()
            opt.zero_grad()


def test_ts112_step_behind_a_condition_that_is_never_true():
    report = sanitized(step_never_taken)
    (finding,) = codes(report, "TS112")
    assert finding.name == "optimizer-not-stepped"
    assert finding.lineno == line_of("loss.backward()", step_never_taken)
    assert finding.message.startswith(
        "20 backward passes filled the gradients of opt's parameters, but opt.step() never ran"
    )
    assert "cleared without being used" in finding.message


def test_ts112_threshold_option():
    # stall_backwards passes: reported during the run; a shorter run, when it ends.
    (early,) = codes(sanitized(lambda: step_never_taken(8), stall_backwards=5), "TS112")
    assert early.details["backward_passes"] == 5 and not early.details["at_exit"]
    (late,) = codes(sanitized(lambda: step_never_taken(8)), "TS112")
    assert late.details["backward_passes"] == 8 and late.details["at_exit"]
    assert "never ran during the whole sanitize() block" in late.message


def test_ts112_gradients_that_only_pile_up_need_five_times_longer():
    # Without any clear this looks like accumulation: 5 x stall_backwards passes.
    (finding,) = codes(sanitized(lambda: step_never_taken(26, False), stall_backwards=5), "TS112")
    assert finding.message.startswith("25 backward passes") and not finding.details["at_exit"]
    assert "cleared without" not in finding.message
    # Shorter: the accumulation never reached its step by the end of the run.
    (finding,) = codes(sanitized(lambda: step_never_taken(24, False), stall_backwards=5), "TS112")
    assert finding.details["backward_passes"] == 24 and finding.details["at_exit"]


def test_ts112_long_deliberate_accumulation_is_clean():
    def train():  # nanoGPT on one GPU: 40 micro-steps per optimizer step
        torch.manual_seed(0)
        model = Net()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        x, y = data(8)
        for _ in range(2):
            for _ in range(40):
                (F.cross_entropy(model(x), y) / 40).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

    assert sanitized(train).findings == []


def test_a_grad_scaler_skipping_every_step_is_ts113_not_ts112():
    report = sanitized(lambda: amp_training(poison=True, steps=22), nonfinite=False)
    (finding,) = codes(report, "TS113")
    assert finding.details["skipped_in_a_row"] == 16
    # The scaler skipped every step, so the optimizer never saw NaN gradients.
    assert codes(report, "TS111") == [] and codes(report, "TS112") == []


def test_ts112_nonfinite_gradients_without_a_grad_scaler():
    def train():
        model = Net()
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        x, y = data()
        x[0, 0] = float("inf")
        for i in range(21):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            if i > 1000:
                opt.step()

    gc.collect()  # no GradScaler of an earlier test may linger
    (finding,) = codes(sanitized(train, nonfinite=False), "TS112")
    assert "also contain Inf/NaN" in finding.message and "GradScaler" not in finding.message
    assert finding.details["grad_scaler"] is False


def test_ts112_lbfgs_many_backwards_inside_one_step_is_clean():
    def train():
        torch.manual_seed(0)
        model = nn.Linear(8, 1)
        opt = torch.optim.LBFGS(model.parameters(), max_iter=30, history_size=5)
        x = torch.randn(32, 8)
        y = x.sum(1, keepdim=True)

        def closure():
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            return loss

        for _ in range(2):
            opt.step(closure)

    assert sanitized(train).findings == []


def test_ts112_manual_updates_without_any_optimizer_are_clean():
    def train():
        torch.manual_seed(0)
        model = Net()
        x, y = data()
        for _ in range(25):
            model.zero_grad()
            F.cross_entropy(model(x), y).backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= 0.05 * p.grad

    assert sanitized(train).findings == []


def test_ts112_raise_action_stops_the_run_inside_backward():
    with pytest.raises(torchlint.SanitizerError) as info:
        sanitized(step_never_taken, action="raise")
    assert info.value.finding.code == "TS112"


def test_finite_math_helper_sanity():
    # Guards the NaN-producing scenarios above: they must really produce NaN.
    assert math.isnan(float(torch.tensor(float("nan")) * 0))


def test_nested_session_does_not_confuse_the_outer_one():
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = data()

    def epoch(iterations):
        for _ in range(iterations):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()

    def outer():
        epoch(3)
        # The inner session gets the step events; the outer one's gradient
        # hooks still fire and must not count these backward passes.
        assert sanitized(lambda: epoch(25)).findings == []
        epoch(3)

    assert sanitized(outer).findings == []


def test_ts111_names_stay_right_next_to_sparse_gradients():
    def train():
        torch.manual_seed(0)
        emb = nn.Embedding(10, 4, sparse=True)
        head = nn.Linear(4, 3)
        opt = torch.optim.SGD([*emb.parameters(), *head.parameters()], lr=0.0)
        idx, y = torch.randint(0, 10, (16,)), torch.randint(0, 3, (16,))
        for _ in range(2):
            opt.zero_grad()
            F.cross_entropy(head(emb(idx)), y).backward()
            head.bias.grad[1] = float("nan")
            opt.step()

    (finding,) = codes(sanitized(train), "TS111")
    assert finding.details["nan"] == ["head.bias"]
