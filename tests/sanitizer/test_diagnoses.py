"""Diagnoses that used to be wrong on real training scripts, each on the real shape.

(The in-place write on a saved tensor is in test_inplace.py, NaN made in
backward in test_anomaly.py.)
"""

from __future__ import annotations

import math

import pytest

import torchlint

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

ACCELERATOR_PATH = {"accelerator_devices": ("cpu",)}  # the CUDA code paths, on the CPU


def sanitized(run, **options):
    with torchlint.sanitize(summary=False, action="record", **options) as report:
        run()
    return report


# -- TS107: two optimizers stepping at different rates ------------------------------------------
class GAN:
    def __init__(self):
        torch.manual_seed(0)
        self.generator = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8))
        self.discriminator = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
        self.opt_g = torch.optim.Adam(self.generator.parameters(), lr=1e-3)
        self.opt_d = torch.optim.Adam(self.discriminator.parameters(), lr=1e-3)

    def train(self, iterations: int, d_every: int = 4, crash_at: int | None = None):
        for it in range(iterations):
            if it == crash_at:
                raise RuntimeError("out of data")
            real = torch.randn(16, 8)
            fake = self.generator(torch.randn(16, 4))
            # discriminator: gradients every iteration, a step every `d_every`
            self.opt_d.zero_grad()
            loss_d = F.softplus(self.discriminator(fake.detach())).mean() + F.softplus(-self.discriminator(real)).mean()
            loss_d.backward()
            if it % d_every == d_every - 1:
                self.opt_d.step()
            # generator
            self.opt_g.zero_grad()
            F.softplus(-self.discriminator(fake)).mean().backward()
            self.opt_g.step()


def test_an_optimizer_stepping_every_4th_iteration_owns_its_parameters():
    gan = GAN()
    report = sanitized(lambda: gan.train(12))
    assert report.by_code("TS107") == [] and report.by_code("TS112") == []


def test_a_crash_before_the_slower_optimizer_stepped_is_no_finding_at_exit():
    gan = GAN()
    with pytest.raises(RuntimeError, match="out of data"):
        with torchlint.sanitize(summary=False, action="record") as report:
            gan.train(12, crash_at=2)
    assert report.findings == []


def test_parameters_that_no_optimizer_holds_are_still_reported():
    gan = GAN()
    gan.opt_d = torch.optim.Adam(gan.discriminator[0].parameters(), lr=1e-3)  # forgot the last layer
    report = sanitized(lambda: gan.train(8, d_every=1))
    (finding,) = report.by_code("TS107")
    assert finding.details["parameters"] == ["self.discriminator.2.weight", "self.discriminator.2.bias"]


# -- TS104: -inf masks are not NaN ---------------------------------------------------------------
class TinyLM(nn.Module):
    """An encoder-only language model called as model(tokens, causal_mask), as in pytorch/examples."""

    def __init__(self, vocab: int = 11, width: int = 16):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        layer = nn.TransformerEncoderLayer(width, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens, mask):
        return self.head(self.encoder(self.embed(tokens), mask=mask))


def train_lm(mask_for, steps: int = 3, pad_logits: bool = False):
    torch.manual_seed(0)
    model = TinyLM()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def run():
        for _ in range(steps):
            tokens = torch.randint(0, 11, (4, 6))
            mask = mask_for(6)
            logits = model(tokens, mask)
            if pad_logits:  # tokens 9 and 10 may never be predicted: -inf logits, a finite loss
                logits = logits.masked_fill(torch.arange(11) >= 9, float("-inf"))
            loss = F.cross_entropy(logits.reshape(-1, 11), torch.randint(0, 9, (24,)))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            assert math.isfinite(loss.item())

    return run


@pytest.mark.parametrize("options", [{}, ACCELERATOR_PATH], ids=["cpu-path", "accelerator-path"])
def test_a_causal_mask_and_masked_logits_are_not_nonfinite_inputs(options):
    causal = nn.Transformer.generate_square_subsequent_mask
    report = sanitized(train_lm(causal, pad_logits=True), **options)
    assert report.by_code("TS104") == []


@pytest.mark.parametrize("options", [{}, ACCELERATOR_PATH], ids=["cpu-path", "accelerator-path"])
class ManualAttention(nn.Module):
    """Attention written by hand: a row whose every position is masked gives NaN."""

    def __init__(self, width: int = 8):
        super().__init__()
        self.qkv = nn.Linear(width, 3 * width)

    def forward(self, x, mask):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        weights = (q @ k.transpose(1, 2) / math.sqrt(q.shape[-1]) + mask).softmax(-1)
        return weights @ v


@pytest.mark.parametrize("options", [{}, ACCELERATOR_PATH], ids=["cpu-path", "accelerator-path"])
def test_a_mask_that_hides_every_position_is_reported(options, mark):
    torch.manual_seed(0)
    model = ManualAttention()
    causal = nn.Transformer.generate_square_subsequent_mask(5)
    hides_all = causal.clone()
    hides_all[2] = float("-inf")  # position 2 may attend to nothing

    def run():
        model(torch.randn(2, 5, 8), causal).sum().backward()  # fine
        out = model(torch.randn(2, 5, 8), hides_all)  # mask-line
        out.sum().backward()

    report = sanitized(run, training_checks=False, **options)
    (finding,) = report.by_code("TS104")
    assert finding.lineno == mark("mask-line") and finding.details["argument"] == "argument 1"
    assert finding.details["inf"] == 13 and finding.details["nan"] == 0


# -- TS112: evaluations and short runs -----------------------------------------------------------
class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 3))

    def forward(self, x):
        return self.body(x)


def test_fgsm_evaluation_after_training_is_not_a_stalled_optimizer():
    torch.manual_seed(0)
    model = SmallNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def run():
        for _ in range(5):
            optimizer.zero_grad()
            F.cross_entropy(model(torch.randn(16, 8)), torch.randint(0, 3, (16,))).backward()
            optimizer.step()
        model.eval()
        robust = 0
        for _ in range(30):  # FGSM: gradients with respect to the inputs, no step
            x = torch.randn(16, 8).requires_grad_()
            y = torch.randint(0, 3, (16,))
            model.zero_grad()
            F.cross_entropy(model(x), y).backward()
            adversarial = x + 0.1 * x.grad.sign()
            with torch.no_grad():
                robust += (model(adversarial).argmax(1) == y).sum().item()

    report = sanitized(run, stall_backwards=5)
    assert report.by_code("TS112") == []


@pytest.mark.parametrize("iterations,clear", [(5, True), (40, False)])
def test_an_optimizer_that_never_steps_is_reported_at_exit_even_in_a_short_run(iterations, clear, mark):
    torch.manual_seed(0)
    model = SmallNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    accumulation = 64  # never reached

    def run():
        for it in range(iterations):
            if clear:
                optimizer.zero_grad()
            loss = F.cross_entropy(model(torch.randn(16, 8)), torch.randint(0, 3, (16,)))
            loss.backward()  # backward-line
            if it + 1 == accumulation:
                optimizer.step()

    report = sanitized(run)  # stall_backwards stays 20, and 5 x 20 passes for piled-up gradients
    (finding,) = report.by_code("TS112")
    assert finding.lineno == mark("backward-line") and finding.details["steps"] == 0
    assert finding.details["backward_passes"] == iterations
    assert "optimizer.step() never ran" in finding.message


# -- repeat counts: one NaN batch is one event ---------------------------------------------------
@pytest.mark.parametrize(
    "options",
    [{}, {"anomaly": False}, ACCELERATOR_PATH, {"anomaly": False, **ACCELERATOR_PATH}],
    ids=["defaults", "anomaly-off", "accelerator-path", "accelerator-path-anomaly-off"],
)
def test_one_nan_batch_is_counted_once(options, mark):
    torch.manual_seed(0)
    model = SmallNet()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def run():
        for step in range(6):
            x = torch.randn(16, 8)
            if step == 2:
                x[3, 1] = float("nan")  # one bad sample
            optimizer.zero_grad()
            out = model(x)  # model-line
            loss = F.cross_entropy(out, torch.randint(0, 3, (16,)))
            loss.backward()
            optimizer.step()

    report = sanitized(run, **options)
    (finding,) = report.by_code("TS104")
    assert finding.lineno == mark("model-line") and finding.count == 1
    (step,) = report.by_code("TS111")  # the update that wrote NaN into the weights, once
    assert step.count == 1
