"""Tensors whose values cannot be read (meta, fake, torch.func, lazy, quantized)
and tensors whose values are not plain (sparse, complex, nested, empty): checks
of values skip what they cannot read and go on judging the real tensors of the
session, checks of metadata (TS102) look at every tensor and count one event
once.  Small real models trained on the CPU; the suite's strict mode turns any
internal error of a check into a failure, and the notes are checked too."""

import collections
import contextlib
import subprocess
import sys
import textwrap
import warnings

import pytest

torch = pytest.importorskip("torch")
from _training_helpers import one_thread  # noqa: E402,F401  (an autouse fixture)
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import torchlint  # noqa: E402
from torchlint.sanitizer.values import readable  # noqa: E402

#: The defaults, torch's anomaly mode, the in-place check, and the CUDA code paths
#: on the CPU (sums queued and read back at the step; the in-place check on).
OPTION_SETS = [{}, {"anomaly": "full"}, {"inplace": "always"}, {"accelerator_devices": ("cpu",)}]
OPTION_IDS = ["default", "anomaly-full", "inplace", "accelerator-path"]


def sanitized(train, **options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torchlint.sanitize(action="record", summary=False, **options) as report:
            train()
    internal = [str(w.message) for w in caught if "internal error" in str(w.message)]
    assert internal == [] and not [n for n in report.notes if "internal error" in n]
    return report


def found(report):
    return [(f.code, f.lineno) for f in report.findings]


def mlp():
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


def step(model, opt, x, y):
    loss = F.mse_loss(model(x), y)  # forward
    opt.zero_grad()
    loss.backward()
    opt.step()  # step


def train_then_nan(model, opt):
    """Three clean steps of a real model, then a NaN batch (the finding every test expects)."""
    for _ in range(3):
        step(model, opt, torch.randn(3, 4), torch.zeros(3, 2))
    step(model, opt, torch.full((3, 4), float("nan")), torch.zeros(3, 2))


def assert_nan_batch_found(report, mark, model_name="model"):
    assert found(report)[:1] == [("TS104", mark("forward"))]
    assert f"argument 0 of {model_name} contains 12 NaN of 12 elements" in report.by_code("TS104")[0].message
    [ts111] = report.by_code("TS111")
    assert ts111.lineno == mark("step") and f"{model_name}.0.weight" in ts111.message


# -- the helper itself -------------------------------------------------------------
def test_plain_tensors_are_returned_as_they_are():
    tensor, param = torch.randn(2, 3), nn.Parameter(torch.randn(3))
    assert readable(tensor) is tensor and readable(param) is param
    assert readable(torch.randn(0)).numel() == 0


def test_tensors_without_data_have_no_values():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        fake = torch.randn(3)
    seen = {}
    torch.vmap(lambda x: seen.setdefault("vmap", readable(x)) or x.sum())(torch.randn(2, 3))
    torch.func.grad(lambda x: seen.setdefault("grad", readable(x)) or x.sum())(torch.randn(3))
    torch.func.functionalize(lambda x: seen.setdefault("functionalize", readable(x)) or x + 1)(torch.randn(3))
    quantized = torch.quantize_per_tensor(torch.randn(3), 0.1, 0, torch.quint8)
    assert readable(torch.randn(3, device="meta")) is None
    assert readable(fake) is None
    assert readable(nn.LazyLinear(3).weight) is None
    assert readable(quantized) is None
    assert seen == {"vmap": None, "grad": None, "functionalize": None}


class OpCounter(TorchDispatchMode):
    """A user's dispatch mode that counts every op it sees (as a profiler would)."""

    def __init__(self):
        super().__init__()
        self.ops = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops[str(func)] += 1
        return func(*args, **(kwargs or {}))


def counted_training(sanitized: bool, **options):
    """The ops a user's dispatch mode sees in 12 training steps, with or without the sanitizer."""
    torch.manual_seed(0)
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    counter = OpCounter()
    session = torchlint.sanitize(action="record", summary=False, **options) if sanitized else contextlib.nullcontext()
    with session, counter:
        for _ in range(12):  # past TS118's window of constant losses and TS111's first norms
            step(model, opt, torch.randn(3, 4), torch.zeros(3, 2))
    return counter.ops


@pytest.mark.parametrize("options", [{}, {"anomaly": "full"}], ids=["default", "anomaly-full"])
def test_a_users_dispatch_mode_never_sees_the_sanitizers_reads(options):
    """Reads under a user's TorchDispatchMode would run through it (a flop counter
    would count them, FakeTensorMode would reject real tensors): none happen."""
    with torch.random.fork_rng():
        plain = counted_training(sanitized=False)
    with torch.random.fork_rng():
        assert counted_training(sanitized=True, **options) == plain
    with OpCounter():
        assert readable(torch.randn(4, 4)) is None


def test_values_of_sparse_nested_complex_and_subclass_tensors():
    coo = torch.sparse_coo_tensor([[0, 0, 2]], [1.0, 2.0, float("nan")], (3,))  # uncoalesced: index 0 twice
    assert readable(coo).tolist()[:1] == [3.0] and readable(coo).isnan().sum() == 1
    csr = torch.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse_csr()
    assert readable(csr).tolist() == [1.0, 2.0]
    jagged = torch.nested.nested_tensor([torch.ones(2, 3), torch.ones(4, 3)], layout=torch.jagged)
    assert readable(jagged).shape == (6, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the strided nested layout is a prototype
        strided = torch.nested.nested_tensor([torch.ones(2, 3), torch.ones(4, 3)]).transpose(1, 2)
    assert readable(strided).numel() == 18
    complex_values = torch.randn(3, dtype=torch.cfloat)
    assert readable(complex_values) is complex_values

    class Tagged(torch.Tensor):
        pass

    tagged = torch.randn(3).as_subclass(Tagged)
    values = readable(tagged)
    assert type(values) is torch.Tensor and values.data_ptr() == tagged.data_ptr()  # a view, no copy


def test_a_torch_without_the_private_functions_still_imports_and_reads():
    """Each private torch function the helper uses has a fallback: without it,
    tensors it would have recognised count as readable, and nothing crashes."""
    code = textwrap.dedent(
        """
        import torch
        del torch._is_functional_tensor
        del torch._C._functorch.is_functorch_wrapped_tensor
        del torch._C._len_torch_dispatch_stack
        from torchlint.sanitizer.values import readable
        plain = torch.randn(3)
        assert readable(plain) is plain
        assert readable(torch.randn(3, device="meta")) is None
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]


# -- checks of values skip what has no data, and keep judging the real tensors -----------------
@pytest.mark.parametrize("options", OPTION_SETS, ids=OPTION_IDS)
def test_a_dry_run_on_the_meta_device_then_a_nan_batch(options, mark):
    def train():
        with torch.device("meta"):
            dry = mlp()
        dry_opt = torch.optim.SGD(dry.parameters(), lr=0.1)
        for _ in range(3):  # shape inference with a backward and a step: legal, no values
            F.mse_loss(dry(torch.randn(3, 4, device="meta")), torch.zeros(3, 2, device="meta")).backward()
            dry_opt.step()
            dry_opt.zero_grad()
        train_then_nan(model, torch.optim.SGD(model.parameters(), lr=0.1))

    model = mlp()
    report = sanitized(train, **options)
    assert_nan_batch_found(report, mark)
    assert {f.code for f in report.findings} <= {"TS101", "TS104", "TS111"}


def test_a_model_without_data_is_not_a_model_left_untrained():
    """Backward passes through a meta model that no optimizer holds: nothing to
    train there, so neither TS107 (no optimizer) nor TS112 (never stepped)."""

    def train():
        with torch.device("meta"):
            dry = mlp()
        for _ in range(3):
            F.mse_loss(dry(torch.randn(3, 4, device="meta")), torch.zeros(3, 2, device="meta")).backward()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            step(model, opt, torch.randn(3, 4), torch.zeros(3, 2))

    model = mlp()
    assert sanitized(train, stall_backwards=2).findings == []


@pytest.mark.parametrize("options", OPTION_SETS, ids=OPTION_IDS)
def test_fake_tensor_mode_then_a_nan_batch(options, mark):
    from torch._subclasses.fake_tensor import FakeTensorMode

    def train():
        with FakeTensorMode():
            fake = mlp()
            fake_opt = torch.optim.Adam(fake.parameters())
            for _ in range(2):
                step(fake, fake_opt, torch.randn(3, 4), torch.zeros(3, 2))
        train_then_nan(model, torch.optim.Adam(model.parameters()))

    model = mlp()
    report = sanitized(train, **options)
    assert_nan_batch_found(report, mark)


@pytest.mark.parametrize("options", OPTION_SETS, ids=OPTION_IDS)
def test_per_sample_gradients_with_vmap_and_grad(options, mark):
    """torch.func's per-sample gradients: batched tensors have no values to read,
    the gradients they produce do.  torch.func.grad refuses to run under
    saved-tensor hooks: the in-place check's step aside for it."""
    from torch.func import functional_call, grad, vmap

    def sample_loss(params, x, y):
        return F.mse_loss(functional_call(model, params, (x.unsqueeze(0),)), y.unsqueeze(0))

    def train():
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for n in range(3):
            x = torch.randn(5, 4)
            if n == 2:
                x[1, 1] = float("nan")  # only in one sample, seen inside vmap
            params = {k: v.detach() for k, v in model.named_parameters()}
            per_sample = vmap(grad(sample_loss), in_dims=(None, 0, 0))(params, x, torch.zeros(5, 2))
            for name, param in model.named_parameters():
                param.grad = per_sample[name].mean(0)
            opt.step()  # per-sample step

    model = mlp()
    report = sanitized(train, **options)
    [ts111] = report.by_code("TS111")
    assert ts111.lineno == mark("per-sample step") and "NaN gradients in 4 parameters" in ts111.message
    assert report.by_code("TS104") == []  # the NaN input was only ever seen batched


def test_lazy_modules_before_their_first_call(mark):
    def train():
        lazy_opt = torch.optim.SGD(lazy.parameters(), lr=0.1)  # created before materialisation: torch warns
        step(lazy, lazy_opt, torch.randn(3, 4), torch.zeros(3, 2))
        model(torch.randn(3, 4))  # materialises model's parameters under the sanitizer
        train_then_nan(model, torch.optim.SGD(model.parameters(), lr=0.1))

    lazy = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(2))
    model = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(2))
    report = sanitized(train)
    assert_nan_batch_found(report, mark)


# -- values that are not plain floats ---------------------------------------------------
def test_a_complex_model_is_judged_on_its_complex_values(mark):
    def train():
        opt = torch.optim.Adam(model.parameters())
        for n in range(8):
            x = torch.randn(3, 4, dtype=torch.cfloat)
            if n == 7:
                x[0, 0] = complex(float("nan"), 0.0)
            loss = model(x).abs().pow(2).mean()  # complex forward
            opt.zero_grad()
            loss.backward()
            opt.step()  # complex step

    model = nn.Sequential(nn.Linear(4, 8, dtype=torch.cfloat), nn.Linear(8, 2, dtype=torch.cfloat))
    report = sanitized(train)
    assert found(report) == [("TS104", mark("complex forward")), ("TS111", mark("complex step"))]
    assert "argument 0 of model contains 1 NaN of 12 elements" in report.findings[0].message


def test_sparse_gradients_and_sparse_inputs(mark):
    class SparseInput(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(5, 2))

        def forward(self, adjacency):
            return torch.sparse.mm(adjacency, self.weight)

    def train():
        emb_opt = torch.optim.SGD(emb.parameters(), lr=0.1)
        for n in range(6):
            scale = float("inf") if n == 5 else 1.0
            loss = emb(torch.randint(0, 10, (6,))).pow(2).sum() * scale  # sparse-grad loss
            emb_opt.zero_grad()
            loss.backward()
            emb_opt.step()  # sparse-grad step
        graph_opt = torch.optim.SGD(graph.parameters(), lr=0.1)
        for n in range(3):
            values = torch.tensor([1.0, 2.0, float("nan") if n == 2 else 3.0])
            adjacency = torch.sparse_coo_tensor([[0, 1, 2], [1, 2, 3]], values, (3, 5))
            loss = graph(adjacency).sum()  # sparse forward
            graph_opt.zero_grad()
            loss.backward()
            graph_opt.step()
        graph(torch.randn(3, 5).relu().to_sparse_csr())

    emb, graph = nn.Embedding(10, 4, sparse=True), SparseInput()
    report = sanitized(train)
    assert [(f.code, f.lineno) for f in report.by_code("TS111")][:1] == [("TS111", mark("sparse-grad step"))]
    assert "Inf gradients in 1 parameter: emb.weight" in report.by_code("TS111")[0].message
    sparse_input = [f for f in report.by_code("TS104") if f.lineno == mark("sparse forward")]
    assert len(sparse_input) == 1
    assert "argument 0 of graph contains 1 NaN of 3 stored elements" in sparse_input[0].message


def test_integer_bool_quantized_and_empty_tensors_make_no_finding():
    class Masked(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.head = nn.Embedding(10, 4), nn.Linear(12, 2)

        def forward(self, tokens, padding):
            return self.head(self.embed(tokens).masked_fill(padding.unsqueeze(-1), 0.0).flatten(1))

    def train():
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            tokens = torch.randint(0, 10, (6, 3))
            loss = F.cross_entropy(model(tokens, tokens == 0), torch.randint(0, 2, (6,)))
            opt.zero_grad()
            loss.backward()
            opt.step()
        empty_opt = torch.optim.SGD(regressor.parameters(), lr=0.1)
        for _ in range(3):  # an empty batch (the last of a filtered loader)
            loss = F.mse_loss(regressor(torch.randn(0, 4)), torch.zeros(0, 2), reduction="sum")
            empty_opt.zero_grad()
            loss.backward()
            empty_opt.step()
        quantized(torch.quantize_per_tensor(torch.randn(3, 4), 0.1, 0, torch.quint8))
        dynamic(torch.randn(3, 4))

    model, regressor = Masked(), mlp()
    quantized, dynamic = torch.ao.nn.quantized.Linear(4, 2), torch.ao.nn.quantized.dynamic.Linear(4, 2)
    assert sanitized(train).findings == []


def test_nested_inputs(mark):
    def train():
        opt = torch.optim.SGD(layer.parameters(), lr=0.1)
        for n in range(3):
            first = torch.full((2, 3), float("nan")) if n == 2 else torch.randn(2, 3)
            batch = torch.nested.nested_tensor([first, torch.randn(4, 3)], layout=torch.jagged)
            loss = layer(batch).values().pow(2).mean()  # nested forward
            opt.zero_grad()
            loss.backward()
            opt.step()

    layer = nn.Linear(3, 2)
    report = sanitized(train)
    assert found(report)[0] == ("TS104", mark("nested forward"))
    assert "argument 0 of layer contains 6 NaN of 18 elements" in report.findings[0].message


# -- TS102: one wrong-device input is one event --------------------------------------------
class TextCNN(nn.Module):
    """The shape of graykode/nlp-tutorial's TextCNN: a bias of the root's own,
    an embedding, one convolution per filter size, max-pooling built in forward."""

    def __init__(self, conv1d, vocab=20, embed=6, length=5, filters=3, sizes=(2, 3), classes=2):
        super().__init__()
        self.conv1d, self.length, self.sizes = conv1d, length, sizes
        self.embedding = nn.Embedding(vocab, embed)
        if conv1d:
            self.convs = nn.ModuleList([nn.Conv1d(embed, filters, size) for size in sizes])
        else:
            self.convs = nn.ModuleList([nn.Conv2d(1, filters, (size, embed)) for size in sizes])
        self.weight = nn.Linear(filters * len(sizes), classes, bias=False)
        self.bias = nn.Parameter(torch.ones(classes))

    def forward(self, tokens):
        embedded = self.embedding(tokens)
        embedded = embedded.transpose(1, 2) if self.conv1d else embedded.unsqueeze(1)
        pooled = []
        for size, conv in zip(self.sizes, self.convs):
            hidden = F.relu(conv(embedded))
            if self.conv1d:
                pooled.append(nn.MaxPool1d(self.length - size + 1)(hidden).flatten(1))
            else:
                pooled.append(nn.MaxPool2d((self.length - size + 1, 1))(hidden).flatten(1))
        return self.weight(torch.cat(pooled, 1)) + self.bias


@pytest.mark.parametrize("conv1d", [False, True], ids=["conv2d", "conv1d"])
@pytest.mark.parametrize(("model_device", "input_device"), [("meta", "cpu"), ("cpu", "meta")])
def test_textcnn_input_on_the_wrong_device_is_one_event_per_step(conv1d, model_device, input_device, mark):
    model = TextCNN(conv1d).to(model_device)
    opt = torch.optim.Adam(model.parameters())

    def train():
        for _ in range(3):
            logits = model(torch.randint(0, 20, (4, 5), device=input_device))  # textcnn forward
            if model_device == "meta":
                F.cross_entropy(logits, torch.randint(0, 2, (4,), device="meta")).backward()
                opt.step()
                opt.zero_grad()

    report = sanitized(train)
    [finding] = report.findings
    assert (finding.code, finding.lineno, finding.count) == ("TS102", mark("textcnn forward"), 3)
    assert finding.message.startswith(
        f"argument 0 of model (TextCNN) is on {input_device} but the module's parameters are on {model_device}"
    )


def test_two_different_device_mismatches_in_one_call_are_two_events():
    class TwoTables(nn.Module):
        """Embeddings on two devices (the only layer torch lets take indices from another one)."""

        def __init__(self):
            super().__init__()
            self.first, self.second = nn.Embedding(10, 4), nn.Embedding(4, 2).to("meta")

        def forward(self, tokens):
            return self.second(self.first(tokens).argmax(-1))

    model = TwoTables()
    report = sanitized(lambda: model(torch.randint(0, 10, (3,), device="meta")))
    [finding] = report.findings  # one line, two events: meta indices into cpu, then cpu indices into meta
    assert finding.count == 2 and finding.message.startswith("argument 0 of model.first (Embedding) is on meta")


class _OnDevice(torch.Tensor):
    """A CPU scalar that says it lives on another device (this machine has one)."""

    @property
    def device(self):
        return getattr(self, "_claimed", torch.device("cpu"))


def _scalar(value, device):
    scalar = torch.tensor(value).as_subclass(_OnDevice)
    scalar._claimed = torch.device(device)
    return scalar


def test_host_values_read_scalars_of_several_devices_in_order(monkeypatch):
    # A model split across accelerators has sums on several devices; torch.stack
    # takes one device per call.  The stand-in devices let a CPU-only machine check
    # that no call mixes them and that each value comes back in its place.
    from torchlint.sanitizer.values import host_values

    stack = torch.stack

    def one_device_stack(tensors, *args, **kwargs):
        assert len({t.device for t in tensors}) == 1, [t.device for t in tensors]
        return stack([t.as_subclass(torch.Tensor) for t in tensors], *args, **kwargs)

    monkeypatch.setattr(torch, "stack", one_device_stack)
    scalars = [_scalar(1.5, "cuda:0"), _scalar(float("nan"), "cuda:1"), _scalar(-2.0, "cuda:0"), _scalar(4.0, "cuda:1")]
    values = host_values(scalars)
    assert values[0] == 1.5 and values[2] == -2.0 and values[3] == 4.0
    assert values[1] != values[1]  # NaN, in its place
    assert host_values([torch.tensor(True), torch.tensor(False)]) == [True, False]
    assert host_values([]) == []
