"""TS107 param-not-in-optimizer, TS108 param-never-updated,
TS109 training-in-eval-mode, TS110 eval-forward-with-grad, and the
guarantees of the training checks (no change to the numbers, hooks removed)."""

import inspect

import pytest

torch = pytest.importorskip("torch")
from _training_helpers import one_thread, sanitized  # noqa: E402,F401  (one_thread is an autouse fixture)
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

import torchlint  # noqa: E402

TRAINING_CODES = ("TS106", "TS107", "TS108", "TS109", "TS110", "TS111", "TS112")


def codes(report, *wanted):
    return [f for f in report.findings if f.code in (wanted or TRAINING_CODES)]


def line_of(fragment, func):
    lines, start = inspect.getsourcelines(func)
    for offset, text in enumerate(lines):
        if fragment in text:
            return start + offset
    raise AssertionError(f"{fragment!r} not in {func.__name__}")


class Classifier(nn.Module):
    """backbone -> dropout -> head, plus an auxiliary layer the forward may skip."""

    def __init__(self, use_aux=True, detach_aux=False, norm=True):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16) if norm else nn.Identity(), nn.ReLU())
        self.drop = nn.Dropout(0.2) if norm else nn.Identity()
        self.head = nn.Linear(16, 3)
        self.aux = nn.Linear(16, 3)
        self.use_aux, self.detach_aux = use_aux, detach_aux

    def forward(self, x):
        h = self.drop(self.backbone(x))
        out = self.head(h)
        if self.use_aux:
            aux = self.aux(h)
            out = out + 0.1 * (aux.detach() if self.detach_aux else aux)
        return out


def data(n=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 8, generator=g), torch.randint(0, 3, (n,), generator=g)


def fit(model, opt, steps=4):
    x, y = data()
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()


# ---------------------------------------------------------------------------
# TS107 param-not-in-optimizer
# ---------------------------------------------------------------------------
def head_left_out():
    torch.manual_seed(0)
    model = Classifier()
    params = list(model.backbone.parameters()) + list(model.aux.parameters())
    opt = torch.optim.SGD(params, lr=0.1)
    x, y = data()
    for _ in range(3):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()


def test_ts107_parameters_missing_from_the_optimizer():
    report = sanitized(head_left_out)
    (finding,) = codes(report, "TS107")
    assert finding.name == "param-not-in-optimizer"
    assert finding.details["parameters"] == ["model.head.weight", "model.head.bias"]
    assert "requires_grad_(False)" in finding.message
    # Reported at the first step of the optimizer.
    assert finding.lineno == line_of("opt.step()", head_left_out)
    assert finding.count == 1


def test_ts107_single_step_run_is_judged_at_exit():
    def train():
        model = Classifier()
        opt = torch.optim.SGD(model.backbone.parameters(), lr=0.1)
        x, y = data()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    (finding,) = codes(sanitized(train), "TS107")
    assert "model.head.weight" in finding.message and "model.aux.bias" in finding.message


def test_ts107_frozen_parameters_outside_the_optimizer_are_fine():
    def train():
        torch.manual_seed(0)
        model = Classifier()
        model.backbone.requires_grad_(False)  # frozen backbone
        opt = torch.optim.SGD(list(model.head.parameters()) + list(model.aux.parameters()), lr=0.1)
        fit(model, opt)

    assert codes(sanitized(train)) == []


def test_ts107_one_model_split_over_two_optimizers_is_fine():
    def train():
        torch.manual_seed(0)
        model = Classifier()
        opt_body = torch.optim.SGD(model.backbone.parameters(), lr=0.1)
        opt_rest = torch.optim.Adam(list(model.head.parameters()) + list(model.aux.parameters()), lr=1e-3)
        x, y = data()
        for _ in range(4):
            opt_body.zero_grad()
            opt_rest.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt_body.step()
            opt_rest.step()

    assert codes(sanitized(train)) == []


# ---------------------------------------------------------------------------
# TS108 param-never-updated
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("variant", ["unused", "detached"])
def test_ts108_parameters_that_never_get_a_gradient(variant):
    def train():
        torch.manual_seed(0)
        model = Classifier(use_aux=variant == "detached", detach_aux=True)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        fit(model, opt, steps=5)

    report = sanitized(train)
    (finding,) = codes(report, "TS108")
    assert finding.name == "param-never-updated"
    assert finding.details["parameters"] == ["model.aux.weight", "model.aux.bias"]
    assert "first 3 steps" in finding.message
    assert finding.lineno == line_of("opt.step()", fit)
    assert codes(report, "TS107") == []


def test_ts108_frozen_backbone_inside_the_optimizer_is_fine():
    def train():
        torch.manual_seed(0)
        model = Classifier()
        model.backbone.requires_grad_(False)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)  # frozen params included
        fit(model, opt, steps=5)

    assert codes(sanitized(train)) == []


def test_ts108_window_option():
    def train():
        model = Classifier(use_aux=False)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        fit(model, opt, steps=4)

    assert codes(sanitized(train, update_window=5), "TS108") == []
    (finding,) = codes(sanitized(train, update_window=2), "TS108")
    assert "first 2 steps" in finding.message


# ---------------------------------------------------------------------------
# TS109 training-in-eval-mode
# ---------------------------------------------------------------------------
def epochs(model_factory, back_to_train, validate_without_grad=True):
    torch.manual_seed(0)
    model = model_factory()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = data()
    for _epoch in range(3):
        if back_to_train:
            model.train()
        for _ in range(2):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        model.eval()
        if validate_without_grad:
            with torch.no_grad():
                model(x)
        else:
            val_loss = F.cross_entropy(model(x), y)  # TS110: graph built for nothing
            val_loss.item()


def test_ts109_training_continues_in_eval_mode_after_validation():
    report = sanitized(lambda: epochs(Classifier, back_to_train=False))
    (finding,) = codes(report, "TS109")
    assert finding.name == "training-in-eval-mode"
    assert finding.lineno == line_of("opt.step()", epochs)
    assert "model.train()" in finding.message and "TL007" in finding.message
    assert finding.details["layers"] == ["backbone.1", "drop"]
    assert finding.count == 4  # epochs 2 and 3, two steps each


def test_ts109_model_train_after_validation_is_fine():
    assert codes(sanitized(lambda: epochs(Classifier, back_to_train=True))) == []


def test_ts109_eval_mode_without_dropout_or_batchnorm_is_not_reported():
    report = sanitized(lambda: epochs(lambda: Classifier(norm=False), back_to_train=False))
    assert codes(report) == []


def test_ts109_batchnorm_frozen_inside_a_training_model_is_fine():
    def train():
        torch.manual_seed(0)
        model = Classifier()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model.train()
        model.backbone[1].eval()  # keep BatchNorm statistics frozen while fine-tuning
        fit(model, opt)

    assert codes(sanitized(train)) == []


# ---------------------------------------------------------------------------
# TS110 eval-forward-with-grad
# ---------------------------------------------------------------------------
def test_ts110_validation_without_no_grad():
    report = sanitized(lambda: epochs(Classifier, back_to_train=True, validate_without_grad=False))
    (finding,) = codes(report)
    assert (finding.code, finding.name) == ("TS110", "eval-forward-with-grad")
    assert finding.lineno == line_of("val_loss = F.cross_entropy(model(x), y)", epochs)
    assert "torch.no_grad()" in finding.message and "TL006" in finding.message
    assert finding.count == 3  # once per validation


def test_ts110_eval_mode_gradients_used_by_autograd_grad_are_fine():
    def saliency():
        torch.manual_seed(0)
        model = Classifier()
        model.eval()
        x, y = data()
        for _ in range(3):
            x = x.clone().requires_grad_(True)
            (grad,) = torch.autograd.grad(F.cross_entropy(model(x), y), x)
            assert grad.shape == x.shape

    assert codes(sanitized(saliency)) == []


def test_ts110_eval_mode_fine_tuning_without_mode_layers_is_fine():
    def train():
        torch.manual_seed(0)
        model = Classifier(norm=False)
        model.eval()
        fit(model, torch.optim.SGD(model.parameters(), lr=0.1))

    assert codes(sanitized(train)) == []


# ---------------------------------------------------------------------------
# guarantees
# ---------------------------------------------------------------------------
def reference_run():
    """Grad accumulation, a closure optimizer and a GradScaler in one run."""
    torch.manual_seed(0)
    model = Classifier()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scaler = torch.amp.GradScaler("cpu")
    x, y = data(64)
    losses = []
    for i in range(8):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x[i % 2 :: 2]), y[i % 2 :: 2]) / 2
        scaler.scale(loss).backward()
        losses.append(loss.item())
        if i % 2 == 1:
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
    lin = nn.Linear(8, 1)
    lbfgs = torch.optim.LBFGS(lin.parameters(), max_iter=4)

    def closure():
        lbfgs.zero_grad()
        out = F.mse_loss(lin(x), x.sum(1, keepdim=True))
        out.backward()
        return out

    for _ in range(2):
        losses.append(lbfgs.step(closure).item())
    return losses, [p.detach().clone() for p in [*model.parameters(), *lin.parameters()]]


def test_numbers_are_bit_identical_and_nothing_is_left_behind():
    plain_losses, plain_weights = reference_run()
    result = {}
    report = sanitized(lambda: result.update(run=reference_run()))
    losses, weights = result["run"]
    assert codes(report) == []
    assert losses == plain_losses
    assert all(torch.equal(a, b) for a, b in zip(weights, plain_weights))


def test_hooks_are_removed_on_exit_also_after_an_error():
    model = Classifier()
    opt = torch.optim.LBFGS(model.parameters(), max_iter=2)
    x, y = data()

    def closure():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        return loss

    with pytest.raises(KeyError):
        with torchlint.sanitize(anomaly=False, action="record", summary=False):
            opt.step(closure)
            raise KeyError("boom")
    for p in model.parameters():
        assert not p._post_accumulate_grad_hooks
        assert not p._backward_hooks
    assert not opt._optimizer_step_pre_hooks


def test_training_checks_can_be_switched_off():
    report = sanitized(lambda: epochs(Classifier, back_to_train=False), training_checks=False)
    assert codes(report) == []


@pytest.mark.parametrize("clear_d", [True, False])
def test_gan_with_requires_grad_toggling_keeps_model_paths(clear_d):
    """D is frozen while G trains (and during D's first forward): its
    parameters are tracked late, but still named from the root model."""

    def train():
        torch.manual_seed(0)
        netG = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8))
        netD = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1), nn.Linear(1, 1))
        optG = torch.optim.Adam(netG.parameters(), lr=1e-3)
        optD = torch.optim.Adam(list(netD.parameters())[:-2], lr=1e-3)  # last layer left out
        real, ones, zeros = torch.randn(16, 8), torch.ones(16, 1), torch.zeros(16, 1)
        for _ in range(4):
            netD.requires_grad_(False)
            optG.zero_grad()
            fake = netG(torch.randn(16, 4))
            F.binary_cross_entropy_with_logits(netD(fake), ones).backward()
            optG.step()
            netD.requires_grad_(True)
            if clear_d:
                optD.zero_grad()
            loss_d = F.binary_cross_entropy_with_logits(netD(real), ones)
            loss_d = loss_d + F.binary_cross_entropy_with_logits(netD(fake.detach()), zeros)
            loss_d.backward()
            optD.step()

    report = sanitized(train)
    (finding,) = codes(report, "TS107")
    assert finding.details["parameters"] == ["netD.3.weight", "netD.3.bias"]
    stale = codes(report, "TS106")
    if clear_d:
        assert [f.code for f in codes(report)] == ["TS107"]
    else:
        assert stale[0].details["parameters"] == ["netD.0.weight", "netD.0.bias", "netD.2.weight", "netD.2.bias"]


RUN_SCRIPT = """
import torch
from torch import nn
from torch.nn import functional as F

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.1), nn.ReLU(), nn.Linear(16, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 8), torch.randint(0, 3, (32,))
for step in range(4):
    F.cross_entropy(model(x), y).backward()
    opt.step()  # never cleared
"""


def test_torchlint_run_reports_training_checks_in_the_json_report(tmp_path, capsys):
    import json

    from torchlint.sanitizer.runner import main

    script = tmp_path / "train.py"
    script.write_text(RUN_SCRIPT)
    report = tmp_path / "report.json"
    with pytest.warns(torchlint.SanitizerWarning, match="TS106 grads-not-cleared"):
        assert main(["--no-anomaly", "--report", str(report), str(script)]) == 0
    (finding,) = [f for f in json.loads(report.read_text())["findings"] if f["code"] in TRAINING_CODES]
    assert (finding["code"], finding["filename"], finding["lineno"]) == ("TS106", str(script), 12)
    assert finding["details"]["parameters"] == ["model.0.weight", "model.0.bias", "model.3.weight", "model.3.bias"]
    assert "TS106" in capsys.readouterr().err  # the summary table


def test_submodules_called_directly_are_named_from_their_model():
    def train():
        torch.manual_seed(0)
        model = Classifier(use_aux=False)
        opt = torch.optim.SGD(list(model.backbone.parameters()) + list(model.aux.parameters()), lr=0.1)
        x, y = data()
        for _ in range(3):
            opt.zero_grad()
            F.cross_entropy(model.head(model.backbone(x)), y).backward()
            opt.step()

    report = sanitized(train)
    assert [f.code for f in codes(report)] == ["TS107", "TS108"]
    assert codes(report, "TS107")[0].details["parameters"] == ["model.head.weight", "model.head.bias"]
    assert codes(report, "TS108")[0].details["parameters"] == ["model.aux.weight", "model.aux.bias"]
