"""TS102-TS104: each check on a real (tiny) model, with the bug and its fixed twin.

TS101 is tested in test_anomaly.py, TS105 in test_inplace.py."""

from __future__ import annotations

import inspect

import pytest

import torchlint

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional


def train(model, batches, **step_kwargs):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for x, y in batches:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()


def test_correct_training_has_no_findings(net, batches, quiet):
    with torchlint.sanitize(**quiet, inplace="always") as report:
        train(net, batches)
    assert report.findings == []


# -- TS102 device-mismatch -----------------------------------------------------
def test_ts102_input_on_another_device_names_the_module_path(net, quiet, mark):
    net.head.to("meta")  # the head lives elsewhere: its input comes from the CPU encoder
    with torchlint.sanitize(**quiet) as report:
        with pytest.raises(RuntimeError):
            net(torch.randn(2, 8))  # call-line
    (finding,) = report.by_code("TS102")
    inner = finding.details.pop("inner_location")
    assert finding.details == {
        "module": "net.head",
        "argument": "argument 0",
        "input_device": "cpu",
        "module_device": "meta",
    }
    assert "net.head (Linear)" in finding.message and ".to('meta')" in finding.message
    # Reported at the user's line that called the model, naming the line inside its forward too.
    assert (finding.filename, finding.lineno) == (__file__, mark("call-line"))
    forward_body = inspect.getsourcelines(type(net).forward)[1] + 1
    assert inner.endswith(f"conftest.py:{forward_body}") and f"(inside the model at {inner})" in finding.message


def test_ts102_nested_inputs_and_keyword_arguments(quiet, mark):
    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("factor", torch.ones(()).to("meta").expand(4).contiguous())

        def forward(self, pair=None, *, x=None):
            return x

    scale = Scale()
    with torchlint.sanitize(**quiet) as report:
        scale(x=torch.randn(4))  # kwarg-line
        scale([torch.zeros(()), torch.randn(2)])  # nested-line
    found = {(f.lineno, f.details["argument"]) for f in report.by_code("TS102")}
    assert found == {(mark("kwarg-line"), "argument 'x'"), (mark("nested-line"), "argument 0[1]")}


def test_ts102_ts103_leave_inputs_that_a_module_pre_hook_moves(quiet):
    layer = nn.Linear(4, 2).to("meta")
    # like accelerate's offloading hooks: the module moves (and casts) its own inputs
    layer.register_forward_pre_hook(lambda module, args: tuple(a.to("meta", torch.float32) for a in args))
    with torchlint.sanitize(**quiet) as report:
        layer(torch.randn(3, 4, dtype=torch.float64))
    assert report.findings == []


def test_ts102_same_device_and_cpu_scalars_are_fine(net, quiet):
    class AddScalar(nn.Module):
        def __init__(self):
            super().__init__()
            self.bias = nn.Parameter(torch.zeros(3))

        def forward(self, x, scalar):
            return x + self.bias * scalar

    with torchlint.sanitize(**quiet) as report:
        net(torch.randn(2, 8))
        AddScalar()(torch.randn(3), torch.tensor(2.0))
    assert report.findings == []


def test_ts102_optimizer_state_on_another_device(quiet, mark):
    model = nn.Linear(4, 2)
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.randn(3, 4)).sum().backward()
    optimizer.step()
    # As after moving state by hand, or a model moved after its optimizer stepped.
    for state in optimizer.state.values():
        state["exp_avg"] = state["exp_avg"].to("meta")
    with torchlint.sanitize(**quiet) as report:
        model(torch.randn(3, 4)).sum().backward()
        with pytest.raises(RuntimeError):
            optimizer.step()  # step-line
        optimizer.state.clear()  # fixed twin: fresh state on the parameters' device
        optimizer.step()
    (finding,) = report.by_code("TS102")
    assert finding.lineno == mark("step-line")
    assert finding.details["state_device"] == "meta" and finding.details["parameter_device"] == "cpu"
    assert finding.details["state"] == "exp_avg" and finding.details["parameter"] == "model.weight"
    assert finding.details["optimizer"] == "Adam"
    assert "create the optimizer after model.to(device)" in finding.message


# -- TS103 dtype-mismatch ------------------------------------------------------
def test_ts103_float64_data_into_float32_model(net, quiet, mark):
    with torchlint.sanitize(**quiet) as report:
        with pytest.raises(RuntimeError):
            net(torch.randn(2, 8, dtype=torch.float64))  # double-line
        net(torch.randn(2, 8, dtype=torch.float64).float())  # fixed twin
    (finding,) = report.by_code("TS103")
    assert finding.details["module"] == "net.encoder.0"
    assert finding.details["input_dtype"] == torch.float64
    assert ".to(torch.float32)" in finding.message


def test_ts103_integer_data_into_linear_but_not_embedding(quiet, mark):
    linear = nn.Linear(4, 2)
    embedding = nn.Embedding(10, 4)
    with torchlint.sanitize(**quiet) as report:
        vectors = embedding(torch.randint(0, 10, (3,)))  # indices into an Embedding: fine
        linear(vectors)
        with pytest.raises(RuntimeError):
            linear(torch.randint(0, 10, (3, 4)))  # int-line
    (finding,) = report.by_code("TS103")
    assert finding.lineno == mark("int-line")
    assert "needs floating input" in finding.message
    assert len(report.findings) == 1


def test_ts103_low_precision_inside_autocast_is_fine(net, quiet):
    x = torch.randn(2, 8)
    with torchlint.sanitize(**quiet) as report:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            net(x.bfloat16())
    assert report.findings == []
    with torchlint.sanitize(**quiet) as report:
        with pytest.raises(RuntimeError):
            net(x.bfloat16())
    assert report.codes() == {"TS103"}


def test_ts103_floating_class_index_targets(quiet, mark):
    logits = torch.randn(4, 3)
    with torchlint.sanitize(**quiet) as report:
        with pytest.raises(RuntimeError):
            F.cross_entropy(logits, torch.tensor([0.0, 2.0, 1.0, 1.0]))  # float-target-line
        with pytest.raises(RuntimeError):
            nn.NLLLoss()(logits.log_softmax(1), torch.tensor([0.0, 2.0, 1.0, 1.0]))  # nll-line
        F.cross_entropy(logits, torch.tensor([0, 2, 1, 1]))  # fixed twin
        F.cross_entropy(logits, torch.softmax(torch.randn(4, 3), 1))  # class probabilities: fine
    lines = sorted(f.lineno for f in report.by_code("TS103"))
    assert lines == [mark("float-target-line"), mark("nll-line")]
    assert "pass target.long()" in report.findings[0].message


# -- TS104 nonfinite-input -----------------------------------------------------
def test_ts104_nan_batch_entering_the_model(net, batches, quiet, mark):
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    with torchlint.sanitize(**quiet, anomaly=False) as report:
        for step, (x, y) in enumerate(batches):
            if step == 2:
                x = x.clone()
                x[0, :3] = float("nan")
                x[1, 0] = float("inf")
            optimizer.zero_grad()
            loss = F.cross_entropy(net(x), y)  # model-line
            loss.backward()
            optimizer.step()
    (finding,) = report.by_code("TS104")  # one finding per (code, line)...
    assert finding.lineno == mark("model-line")
    # ...counting one event once: the batch of step 2 entering the model. The same NaN reaching
    # cross_entropy in step 2, and the NaN logits of step 3 (the update of step 2 wrote NaN into
    # the weights, TS111's finding when the training checks are on), are not new events.
    assert finding.count == 1
    assert finding.details["argument"] == "argument 0"
    assert finding.details["nan"] == 3 and finding.details["inf"] == 1
    assert finding.message.startswith("argument 0 of net contains 3 NaN and 1 Inf of 128 elements")


def test_ts104_nonfinite_target_and_loss(quiet, mark):
    prediction = torch.randn(4, requires_grad=True)
    target = torch.tensor([1.0, float("inf"), 0.0, 2.0])
    with torchlint.sanitize(**quiet, anomaly=False) as report:
        loss = F.mse_loss(prediction, target)  # mse-line
        manual = (prediction.log() * 0).sum() + (prediction * float("nan")).sum()
        manual.backward()  # manual-backward-line
    by_arg = {f.details["argument"]: f for f in report.by_code("TS104")}
    assert by_arg["target"].lineno == mark("mse-line") and by_arg["target"].details["inf"] == 1
    assert by_arg["loss"].lineno in {mark("mse-line"), mark("manual-backward-line")}
    lines = {f.lineno for f in report.by_code("TS104")}
    assert mark("manual-backward-line") in lines
    assert loss.isinf()


def test_ts104_batched_device_path_syncs_once_per_step(net, batches, quiet, mark):
    """accelerator_devices=("cpu",) runs the CUDA code path: queued sums, one sync per step."""
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    session = torchlint.sanitize(**quiet, anomaly=False, accelerator_devices=("cpu",))
    with session as report:
        check = next(c for c in session.checks if type(c).__name__ == "NonfiniteCheck")
        for step, (x, y) in enumerate(batches):
            if step == 1:
                x = x.clone()
                x[0, 0] = float("nan")
            optimizer.zero_grad()
            loss = F.cross_entropy(net(x), y)  # batched-line
            loss.backward()
            assert report.by_code("TS104") == [] or step > 1  # not reported before the step's sync
            optimizer.step()
        syncs = check.syncs
    assert syncs == len(batches)
    first = report.by_code("TS104")[0]
    assert first.lineno == mark("batched-line") and first.details["argument"] == "argument 0"


def test_ts104_batched_path_does_not_keep_tensors_alive(quiet, mark):
    session = torchlint.sanitize(**quiet, anomaly=False, accelerator_devices=("cpu",))
    with session as report:
        F.mse_loss(torch.full((4,), float("nan")), torch.zeros(4))  # freed-line
        # the input is gone now; its queued sum is read back at exit
    (finding,) = [f for f in report.by_code("TS104") if f.details["argument"] == "input"]
    assert finding.lineno == mark("freed-line") and finding.details["nan"] is None
    assert "freed before the batched check" in finding.message


def test_ts104_clean_data_has_no_finding(net, batches, quiet):
    with torchlint.sanitize(**quiet, nonfinite=True) as report:
        train(net, batches)
    assert report.by_code("TS104") == []


# -- lazy modules ----------------------------------------------------------------
def test_lazy_modules_are_checked_once_materialised(quiet, mark):
    lazy = nn.Sequential(nn.LazyLinear(4), nn.ReLU())
    with torchlint.sanitize(**quiet) as report:
        lazy(torch.randn(2, 8))  # first call materialises the parameters: nothing to compare yet
        with pytest.raises(RuntimeError):
            lazy(torch.randn(2, 8, dtype=torch.float64))  # lazy-line
    (finding,) = report.findings
    assert (finding.code, finding.lineno) == ("TS103", mark("lazy-line"))
