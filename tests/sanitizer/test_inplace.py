"""TS105: in-place writes that overwrite a tensor autograd saved for backward, and nothing else.

Each shape trains a real small model on the CPU with ``inplace="always"`` (on
CUDA runs it is the default).
"""

from __future__ import annotations

import pytest

import torchlint

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional


# -- legal in-place ops are not findings ----------------------------------------------------
class BasicBlock(nn.Module):
    """torchvision's residual block: ReLU(inplace=True) and `out += identity`."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


class LegalNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
        self.block = BasicBlock(8)
        self.head = nn.Sequential(nn.Conv2d(8, 8, 1), nn.LeakyReLU(0.1, inplace=True))
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = self.head(self.block(self.stem(x)))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(F.relu(x, inplace=True))


MEAN = torch.tensor([0.5, 0.4, 0.3]).view(3, 1, 1)
STD = torch.tensor([0.2, 0.2, 0.2]).view(3, 1, 1)


def normalize_(image):
    """A Normalize transform that works in place on the data."""
    return image.sub_(MEAN).div_(STD)


def train_legal(sanitized: bool):
    torch.manual_seed(0)
    model = LegalNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    generator = torch.Generator().manual_seed(2)
    losses = []

    def loop():
        for _ in range(3):
            x = torch.stack([normalize_(torch.rand(3, 8, 8, generator=generator)) for _ in range(4)])
            y = torch.randint(0, 4, (4,), generator=generator)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss += 1e-3 * sum(p.pow(2).sum() for p in model.parameters())  # `loss += term`
            loss.backward()
            optimizer.step()
            losses.append(loss.detach().clone())

    if sanitized:
        with torchlint.sanitize(inplace="always", summary=False, action="record") as report:
            loop()
        assert report.findings == []
    else:
        loop()
    return losses, [t.detach().clone() for t in model.state_dict().values()]


def test_legal_inplace_ops_are_not_findings_and_change_no_number():
    plain_losses, plain_weights = train_legal(sanitized=False)
    losses, weights = train_legal(sanitized=True)
    assert all(torch.equal(a, b) for a, b in zip(plain_losses, losses))
    assert all(torch.equal(a, b) for a, b in zip(plain_weights, weights))


# -- writes that overwrite a saved tensor ---------------------------------------------------
class Overwrites(nn.Module):
    def __init__(self, style: str):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 3)
        self.style = style

    def forward(self, x):
        h = torch.sigmoid(self.fc1(x))  # saver-line
        if self.style == "direct":
            h.mul_(0.5)  # direct-line
        elif self.style == "detach":
            h.detach().clamp_(max=0.9)  # detach-line
        elif self.style == "no_grad":
            with torch.no_grad():
                h[:, 0] = 0  # no_grad-line
        elif self.style == "data":
            h.data.mul_(0.5)  # data-line
        out = self.fc2(h)  # fc2-line
        if self.style == "param-data":
            self.fc2.weight.data.mul_(0.5)  # param-data-line
        return out


def train(model, steps=2, **options):
    """A few SGD steps under the sanitizer; returns the report and the RuntimeError that ended them."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(1)
    error = None
    with torchlint.sanitize(summary=False, action="record", **options) as report:
        try:
            for _ in range(steps):
                x, y = torch.randn(4, 8, generator=generator), torch.randint(0, 3, (4,), generator=generator)
                optimizer.zero_grad()
                loss = F.cross_entropy(model(x), y)
                loss.backward()  # backward-line
                optimizer.step()
        except RuntimeError as exc:
            error = exc
    return report, error


@pytest.mark.parametrize(
    "style,op,saver,noticed",
    [
        ("direct", "Tensor.mul_", "saver-line", True),
        ("detach", "Tensor.clamp_", "saver-line", True),  # .detach() shares the version counter
        ("no_grad", "index assignment (x[...] = ...)", "saver-line", True),
        ("data", "Tensor.mul_", "saver-line", False),  # .data does not: gradients silently wrong
        ("param-data", "Tensor.mul_", "fc2-line", False),
    ],
)
def test_a_write_into_a_saved_tensor_is_reported_at_the_write(style, op, saver, noticed, mark):
    torch.manual_seed(0)
    report, error = train(Overwrites(style), inplace="always")
    (finding,) = report.by_code("TS105")
    assert (finding.filename, finding.lineno) == (__file__, mark(f"{style}-line"))
    assert finding.message.startswith(f"in-place {op} overwrote a tensor")
    assert finding.details["saved_at"] == f"{__file__}:{mark(saver)}"
    assert finding.details["backward_location"] == f"{__file__}:{mark('backward-line')}"
    assert finding.details["autograd_noticed"] is noticed
    assert ("silently computed gradients from the new values" in finding.message) is not noticed
    assert report.by_code("TS101") == []  # one event, one finding
    if noticed:  # autograd's own error, as without the sanitizer, with the write's line attached
        assert "modified by an inplace operation" in str(error)
        assert [note for note in getattr(error, "__notes__", []) if "TS105" in note]
    else:  # plain Python finishes these runs, and so does the sanitized one
        assert error is None and finding.count == 2


def test_an_optimizer_step_between_forward_and_backward_is_reported_at_the_step(mark):
    """The classic GAN mistake: D steps, then G's loss backpropagates through D's old graph."""
    torch.manual_seed(0)
    generator, discriminator = nn.Linear(4, 8), nn.Linear(8, 1)
    opt_g = torch.optim.SGD(generator.parameters(), lr=0.1)
    opt_d = torch.optim.SGD(discriminator.parameters(), lr=0.1)
    real = torch.randn(6, 8)
    with torchlint.sanitize(summary=False, action="record", inplace="always") as report:
        fake = generator(torch.randn(6, 4))
        d_fake = discriminator(fake)  # d-fake-line
        loss_d = F.softplus(d_fake).mean() + F.softplus(-discriminator(real)).mean()
        opt_d.zero_grad()
        loss_d.backward(retain_graph=True)
        opt_d.step()  # step-line
        loss_g = F.softplus(-d_fake).mean()
        opt_g.zero_grad()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            loss_g.backward()
    (finding,) = report.by_code("TS105")
    assert finding.lineno == mark("step-line") and finding.details["op"] == "SGD.step()"
    assert finding.details["saved_at"] == f"{__file__}:{mark('d-fake-line')}"
    assert report.by_code("TS101") == []


def test_a_graph_dropped_without_backward_is_never_a_finding():
    torch.manual_seed(0)
    validated, model = Overwrites("data"), Overwrites("none")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    with torchlint.sanitize(summary=False, action="record", inplace="always", training_checks=False) as report:
        validated(torch.randn(4, 8))  # the .data write happens, but no backward uses the graph
        for _ in range(2):  # a graph kept alive by retain_graph while the optimizer updates its weights
            optimizer.zero_grad(set_to_none=False)
            loss = F.cross_entropy(model(torch.randn(4, 8)), torch.tensor([0, 1, 2, 0]))
            loss.backward(retain_graph=True)
            optimizer.step()
        with torch.no_grad():
            nn.init.normal_(model.fc1.weight)  # initialisation under no_grad
    assert report.findings == []


def test_the_sanitizer_performs_autograds_version_check_itself():
    x = torch.randn(3, requires_grad=True)
    with torchlint.sanitize(summary=False, action="record", inplace="always", anomaly=False) as report:
        y = x.sigmoid()
        with torch.no_grad():
            y.mul_(2)  # no_grad does not protect a tensor saved for backward
        with pytest.raises(RuntimeError, match="is at version 1; expected version 0 instead"):
            y.sum().backward()
    assert [f.details["op"] for f in report.by_code("TS105")] == ["Tensor.mul_"]


def test_saved_tensors_are_forgotten_when_the_graph_is_freed():
    torch.manual_seed(0)
    model = Overwrites("none")
    session = torchlint.sanitize(summary=False, action="record", inplace="always")
    with session:
        check = next(c for c in session.checks if type(c).__name__ == "InplaceCheck")
        loss = F.cross_entropy(model(torch.randn(4, 8)), torch.tensor([0, 1, 2, 0]))
        assert check._saved  # the graph holds saved tensors...
        loss.backward()
        assert not check._saved  # ...and releases them by reference counting at backward
        del loss
        model(torch.randn(4, 8))
        assert not check._saved  # ...or as soon as a graph is dropped without backward
    assert session.report.findings == []


def test_writes_inside_backward_are_not_reported():
    x = torch.randn(3, requires_grad=True)
    with torchlint.sanitize(summary=False, action="record", inplace="always") as report:
        saved = x.sigmoid()
        out = saved * 3
        out.register_hook(lambda grad: saved.data.add_(0))  # runs during backward
        out.sum().backward()
    assert report.findings == []


# -- when the check is on ------------------------------------------------------------------
def test_auto_is_off_on_cpu_and_on_for_accelerators():
    torch.manual_seed(0)
    report, _ = train(Overwrites("data"))  # inplace="auto", CPU only: not active
    assert report.by_code("TS105") == []
    report, _ = train(Overwrites("data"), inplace="auto", accelerator_devices=("cpu",))
    assert len(report.by_code("TS105")) == 1
    report, _ = train(Overwrites("data"), inplace="never", accelerator_devices=("cpu",))
    assert report.by_code("TS105") == []


def test_auto_waits_while_a_user_mode_is_active():
    from torch.overrides import TorchFunctionMode

    class PassThrough(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    torch.manual_seed(0)
    model = Overwrites("data")
    x = torch.randn(4, 8)
    with torchlint.sanitize(summary=False, action="record", accelerator_devices=("cpu",)) as report:
        with PassThrough():
            model(x).sum().backward()  # not switched on under the user's mode...
        assert report.findings == []
        model(x).sum().backward()  # ...but right after it
        assert torch._C._len_torch_function_stack() == 1
    assert len(report.by_code("TS105")) == 1
    assert torch._C._len_torch_function_stack() == 0


def test_the_mode_is_off_during_an_optimizer_step_and_back_after():
    torch.manual_seed(0)
    model = Overwrites("none")
    optimizer = torch.optim.Adam(model.parameters())
    seen = []

    def probe(opt, args, kwargs):
        seen.append(torch._C._len_torch_function_stack())

    handle = optimizer.register_step_pre_hook(probe)
    try:
        with torchlint.sanitize(summary=False, action="record", inplace="always") as report:
            for _ in range(2):
                optimizer.zero_grad()
                F.cross_entropy(model(torch.randn(4, 8)), torch.tensor([0, 1, 2, 0])).backward()
                optimizer.step()
                assert torch._C._len_torch_function_stack() == 1  # back after the step
            optimizer.step(lambda: None)  # a closure runs forward passes: the mode stays on
    finally:
        handle.remove()
    assert report.findings == []
    assert seen == [0, 0, 1]


def test_a_version_error_on_a_cpu_run_switches_the_check_on(mark):
    """inplace="auto" on the CPU: the first failure is TS101 at the op that saved the tensor;
    a loop that catches it and goes on gets TS105 at the write from then on."""
    torch.manual_seed(0)
    model = Overwrites("direct")
    failures = 0
    with torchlint.sanitize(summary=False, action="record") as report:
        for _ in range(3):
            try:
                F.cross_entropy(model(torch.randn(4, 8)), torch.tensor([0, 1, 2, 0])).backward()
            except RuntimeError:
                failures += 1  # e.g. a loop that skips the batches it cannot train on
    assert failures == 3
    assert [f.lineno for f in report.by_code("TS101")] == [mark("saver-line")]
    (write,) = report.by_code("TS105")
    assert write.lineno == mark("direct-line") and write.count == 2
    assert any("the in-place check (TS105) is on from now on" in note for note in report.notes)


def test_torch_func_transforms_run_under_the_check_and_it_comes_back_after(mark):
    """torch.func.grad raises under any saved-tensor hooks: the check's step aside
    for the transform (which Python alone runs) and are back for the next write."""
    model = Overwrites("data")
    x = torch.randn(4, 8)

    def loss_of(params):
        return torch.func.functional_call(model, params, (x,)).sum()

    with torchlint.sanitize(inplace="always", anomaly=False, action="record", summary=False) as report:
        params = {name: p.detach() for name, p in model.named_parameters()}
        grads = torch.func.grad(loss_of)(params)
        model(x).sum().backward()
    assert set(grads) == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}
    assert [(f.code, f.lineno) for f in report.findings] == [("TS105", mark("data-line"))]
