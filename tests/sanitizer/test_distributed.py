"""Distributed runs: ranks on findings, per-rank reports gathered by rank 0,
TS119 (DistributedSampler without set_epoch) and TS120 (DDP parameters without
a gradient), with real gloo process groups and real torchrun launches."""

import json
import os
import re
import subprocess
import sys
import textwrap
import time

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
from _training_helpers import one_thread, sanitized  # noqa: E402,F401  (one_thread is an autouse fixture)
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset  # noqa: E402

from torchlint.sanitizer import ranks  # noqa: E402
from torchlint.sanitizer.findings import Finding, Report  # noqa: E402

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available")


# -- ranks, report files, merging (no processes) ---------------------------------------------------
def test_rank_comes_from_the_launcher_environment(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    assert ranks.detect() is None
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert ranks.detect() is None  # one process is not a distributed run
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert ranks.detect() == ranks.RankInfo(1, 4, 1, None)


def test_per_rank_report_paths():
    assert ranks.rank_path("out/report.json", 1) == "out/report.rank1.json"
    assert ranks.rank_path("report", 0) == "report.rank0.json"
    assert ranks.rank_path("report-{rank}.json", 3) == "report-3.json"


def finding(code, line, count, rank):
    return Finding(code, "name", f"{code} on rank {rank}", "train.py", line, count=count, rank=rank)


def test_merged_report_says_which_ranks_saw_what():
    def rank_report(rank, *findings):
        report = Report()
        report.rank, report.world_size = rank, 2
        report.findings.extend(findings)
        return report.to_dict()

    merged = ranks.merge(
        {
            0: rank_report(0, finding("TS119", 20, 1, 0)),
            1: {**rank_report(1, finding("TS104", 22, 3, 1), finding("TS119", 20, 1, 1)), "failure": "boom"},
        },
        2,
    )
    by_code = {f.code: f for f in merged.findings}
    assert by_code["TS119"].ranks == [0, 1] and by_code["TS119"].count == 2
    assert by_code["TS104"].count_by_rank == {1: 3}
    assert by_code["TS104"].format().startswith("train.py:22: [rank 1] TS104")
    summary = merged.format_summary()
    assert summary.splitlines()[0] == "torchlint.sanitize [all 2 ranks]: 2 findings"
    assert "ranks" in summary.splitlines()[1]
    assert any(line.split()[:3] == ["TS104", "name", "1"] for line in summary.splitlines())
    assert any(line.split()[:3] == ["TS119", "name", "0,1"] for line in summary.splitlines())
    assert "rank 1 stopped with boom" in summary
    data = merged.to_dict()
    assert data["ranks"] == [0, 1] and data["failures"] == {"1": "boom"}
    assert [f["count_by_rank"] for f in data["findings"]] == [{"0": 1, "1": 1}, {"1": 3}]


def rank_reports(tmp_path, rank, timeout=5.0):
    return ranks.RankReports(ranks.RankInfo(rank, 2, rank, 2), tmp_path / "report.json", timeout)


def own_report(rank, *findings):
    report = Report()
    report.rank, report.world_size = rank, 2
    report.findings.extend(findings)
    return report


def test_rank_0_gathers_a_finished_rank_and_writes_the_merged_report(tmp_path):
    rank_reports(tmp_path, 1).write(own_report(1, finding("TS104", 22, 3, 1)), finished=True)
    started = time.monotonic()
    rank_reports(tmp_path, 0).publish(own_report(0), summary=False, color=False)
    assert time.monotonic() - started < 2  # nothing to wait for
    merged = json.loads((tmp_path / "report.json").read_text())
    assert merged["ranks"] == [0, 1] and merged["findings"][0]["count_by_rank"] == {"1": 3}
    assert json.loads((tmp_path / "report.rank0.json").read_text())["finished"] is True


def test_a_rank_whose_process_ended_mid_run_is_not_waited_for(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    writer = rank_reports(tmp_path, 1)
    writer.write(own_report(1, finding("TS111", 30, 1, 1)), finished=False)
    data = json.loads((tmp_path / "report.rank1.json").read_text())
    data["pid"] = int(dead.stdout)  # as if rank 1 had been killed after its last finding
    (tmp_path / "report.rank1.json").write_text(json.dumps(data))
    started = time.monotonic()
    merged, status = rank_reports(tmp_path, 0, timeout=30).gather(own_report(0))
    assert time.monotonic() - started < 5
    assert status == {1: "unfinished"} and [f.code for f in merged.findings] == ["TS111"]


def test_without_a_shared_place_every_rank_prints_its_own_summary(monkeypatch, capsys):
    for name in ("MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID"):
        monkeypatch.delenv(name, raising=False)
    reports = ranks.RankReports(ranks.RankInfo(1, 2), None, 5.0)
    assert reports.own_path is None
    reports.publish(own_report(1, finding("TS104", 22, 3, 1)), summary=True, color=False)
    err = capsys.readouterr().err
    assert err.startswith("torchlint.sanitize [rank 1 of 2]: 1 finding") and "TS104" in err


def test_a_rank_that_never_reported_is_named_after_the_timeout(tmp_path, capsys):
    rank_reports(tmp_path, 0, timeout=0.2).publish(own_report(0), summary=True, color=False)
    err = capsys.readouterr().err
    assert "torchlint.sanitize [ranks 0 of 2]: no findings" in err
    assert "rank 1: no report" in err


# -- TS119 sampler-epoch-not-set (single process: the sampler is told its replica) --------------------
def sampler_run(set_epoch, epochs=2, peek=False, shuffle=True):
    data = TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,)))
    sampler = DistributedSampler(data, num_replicas=2, rank=0, shuffle=shuffle, seed=0)
    train_loader = DataLoader(data, batch_size=4, sampler=sampler)
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    orders = []

    def run():
        if peek:
            next(iter(train_loader))  # a look at one batch is not an epoch
        for epoch in range(epochs):
            if set_epoch:
                sampler.set_epoch(epoch)
            order = []
            for x, y in train_loader:  # epoch loop
                order.append(x[0, 0].item())
                opt.zero_grad()
                F.cross_entropy(model(x), y).backward()
                opt.step()
            orders.append(order)

    return sanitized(run), orders


def test_sampler_without_set_epoch_is_reported_at_the_second_epoch(mark):
    report, orders = sampler_run(set_epoch=False, epochs=3)
    assert orders[0] == orders[1] == orders[2]  # really the same order every epoch
    [finding] = report.by_code("TS119")
    assert finding.lineno == mark("epoch loop") and finding.count == 1
    assert "`train_loader`" in finding.message and "sampler.set_epoch(epoch)" in finding.message
    assert "same epoch (0)" in finding.message and finding.details["twin"] == "TL021"


@pytest.mark.parametrize(
    "options",
    [{"set_epoch": True}, {"set_epoch": True, "peek": True}, {"set_epoch": False, "shuffle": False}],
    ids=["set_epoch", "peek-then-set_epoch", "no-shuffle"],
)
def test_sampler_clean_twins(options):
    report, orders = sampler_run(**options)
    assert report.by_code("TS119") == []
    if options.get("shuffle", True):
        assert orders[0] != orders[1]


def test_sampler_patch_is_removed_on_exit():
    original = DistributedSampler.__dict__["__iter__"]
    sampler_run(set_epoch=False)
    assert DistributedSampler.__dict__["__iter__"] is original


# -- TS120 with a real single-process gloo group --------------------------------------------------------
@pytest.fixture
def gloo_group(tmp_path):
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.head = nn.Linear(16, 3)
        self.aux = nn.Linear(16, 3)

    def forward(self, x, use_aux=True):
        h = self.body(x).relu()
        return self.head(h) + self.aux(h) if use_aux else self.head(h)


def ddp_steps(ddp_model, use_aux, steps=3):
    opt = torch.optim.SGD(ddp_model.parameters(), lr=0.1)
    x, y = torch.randn(16, 8), torch.randint(0, 3, (16,))
    for step in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(ddp_model(x, use_aux=use_aux(step)), y)
        loss.backward()  # ddp backward
        opt.step()


def test_ddp_parameter_without_gradient_is_reported_before_ddp_fails(gloo_group, mark):
    torch.manual_seed(0)
    ddp_model = DDP(TwoHeads())
    with torchlint_record() as report:
        with pytest.raises(RuntimeError, match="finished reduction"):
            ddp_steps(ddp_model, use_aux=lambda step: step == 0)
    [finding] = report.by_code("TS120")
    assert finding.lineno == mark("ddp backward") and finding.count == 1
    assert "`ddp_model`" in finding.message
    assert finding.details["parameters"] == ["ddp_model.module.aux.weight", "ddp_model.module.aux.bias"]
    assert "find_unused_parameters=True" in finding.message


def test_ddp_clean_twins(gloo_group):
    torch.manual_seed(0)
    with torchlint_record() as report:
        ddp_steps(DDP(TwoHeads()), use_aux=lambda step: True)
        ddp_steps(DDP(TwoHeads(), find_unused_parameters=True), use_aux=lambda step: step == 0)
        frozen = TwoHeads()
        frozen.aux.requires_grad_(False)
        ddp_steps(DDP(frozen), use_aux=lambda step: False)
    assert report.by_code("TS120") == []


def test_fsdp2_sharded_model_is_checked_and_named(gloo_group, mark):
    """FSDP2 parameters and gradients are DTensors: the checks read this rank's shard."""
    fully_shard = pytest.importorskip("torch.distributed.fsdp").fully_shard
    torch.manual_seed(0)
    sharded_model = fully_shard(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)))
    opt = torch.optim.SGD(sharded_model.parameters(), lr=0.1)
    with torchlint_record() as report:  # the suite's strict mode turns an internal error into a failure
        for step in range(3):
            x, y = torch.randn(4, 8), torch.randint(0, 3, (4,))
            if step == 2:
                x[0, 0] = float("nan")
            opt.zero_grad()
            loss = F.cross_entropy(sharded_model(x), y)  # fsdp forward
            loss.backward()
            opt.step()  # fsdp step
    assert [(f.code, f.lineno) for f in report] == [("TS104", mark("fsdp forward")), ("TS111", mark("fsdp step"))]
    assert "argument 0 of sharded_model" in report.by_code("TS104")[0].message
    assert "sharded_model.0.weight" in report.by_code("TS111")[0].message


def torchlint_record():
    import torchlint

    return torchlint.sanitize(anomaly=False, action="record", summary=False)


def test_graph_walk_finds_exactly_the_leaves_a_backward_pass_reaches():
    from torchlint.sanitizer.ddp_gradients import reachable_parameters

    model = TwoHeads()
    ids = reachable_parameters((model(torch.randn(2, 8), use_aux=False).sum(),))
    assert {name for name, p in model.named_parameters() if id(p) in ids} == {
        "body.weight",
        "body.bias",
        "head.weight",
        "head.bias",
    }


# -- real torchrun launches, 2 gloo processes -------------------------------------------------------------
TRAIN = textwrap.dedent(
    """
    import sys
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


    def main():
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        torch.manual_seed(0)
        ddp_model = DDP(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)))
        optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.1)
        data = TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
        sampler = DistributedSampler(data, seed=0)
        loader = DataLoader(data, batch_size=8, sampler=sampler)
        for epoch in range(2):
            for step, (x, y) in enumerate(loader):  # EPOCH-LOOP
                if rank == 1 and epoch == 1 and step == len(loader) - 1:
                    x[0, 0] = float("nan")
                optimizer.zero_grad()
                loss = F.cross_entropy(ddp_model(x), y)  # FORWARD
                loss.backward()
                optimizer.step()  # STEP
        dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """
)

HANG = textwrap.dedent(
    """
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP


    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.body, self.head, self.aux = nn.Linear(8, 16), nn.Linear(16, 3), nn.Linear(16, 3)

        def forward(self, x, use_aux):
            h = self.body(x).relu()
            return self.head(h) + self.aux(h) if use_aux else self.head(h)


    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(TwoHeads())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 8), torch.randint(0, 3, (16,))
    for step in range(3):
        opt.zero_grad()
        # rank 1 skips the aux head from step 1 on: DDP's all-reduce would wait forever
        loss = F.cross_entropy(model(x, use_aux=rank == 0 or step == 0), y)
        loss.backward()  # BACKWARD
        opt.step()
    dist.destroy_process_group()
    """
)


def line(source, marker):
    return next(i for i, text in enumerate(source.splitlines(), 1) if marker in text)


def torchrun(tmp_path, *command, timeout=120):
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
        "PYTHONWARNINGS": "ignore::UserWarning:torch.distributed",
    }
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "TORCHLINT_SANITIZER_STRICT"):
        env.pop(name, None)
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", *command],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return result, time.monotonic() - started


def test_torchrun_no_python_each_rank_reports_and_rank_0_gathers(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    result, _ = torchrun(
        tmp_path, "--no-python", "torchlint", "run", "--no-anomaly", "--report", "report.json", "train.py"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    per_rank = {r: json.loads((tmp_path / f"report.rank{r}.json").read_text()) for r in (0, 1)}
    for r, data in per_rank.items():
        assert data["rank"] == r and data["world_size"] == 2 and data["finished"] is True
        assert all(f["rank"] == r for f in data["findings"])
    assert {f["code"] for f in per_rank[0]["findings"]} == {"TS111", "TS119"}
    assert {f["code"] for f in per_rank[1]["findings"]} == {"TS104", "TS111", "TS119"}

    merged = json.loads((tmp_path / "report.json").read_text())
    by_code = {f["code"]: f for f in merged["findings"]}
    assert merged["ranks"] == [0, 1] and merged["world_size"] == 2
    assert by_code["TS104"]["ranks"] == [1] and by_code["TS104"]["lineno"] == line(TRAIN, "# FORWARD")
    assert "argument 0 of ddp_model" in by_code["TS104"]["message"]  # the variable, not DistributedDataParallel
    assert by_code["TS111"]["ranks"] == [0, 1] and by_code["TS111"]["lineno"] == line(TRAIN, "# STEP")
    assert "ddp_model.module.0.weight" in by_code["TS111"]["message"]
    assert by_code["TS119"]["ranks"] == [0, 1] and by_code["TS119"]["lineno"] == line(TRAIN, "# EPOCH-LOOP")

    summary = result.stderr
    assert "torchlint.sanitize [all 2 ranks]: 3 findings" in summary
    assert "torchlint.sanitize [rank 1 of 2]: 3 findings (TS104, TS111, TS119)" in summary
    assert "[rank 1] TS104 nonfinite-input" in summary  # the warning carries the rank too


def test_torchrun_module_form_one_rank_fails_before_the_hang_and_the_run_stops(tmp_path):
    (tmp_path / "train.py").write_text(HANG)
    result, seconds = torchrun(
        tmp_path, "-m", "torchlint", "run", "--no-anomaly", "--raise", "--report", "report.json", "train.py"
    )
    assert result.returncode != 0 and seconds < 90
    merged = json.loads((tmp_path / "report.json").read_text())
    [finding] = merged["findings"]
    assert finding["code"] == "TS120" and finding["ranks"] == [1]
    assert finding["lineno"] == line(HANG, "# BACKWARD")
    assert finding["details"]["parameters"] == ["model.module.aux.weight", "model.module.aux.bias"]
    assert re.match(r"SanitizerError: \S*train.py:\d+: \[rank 1\] TS120", merged["failures"]["1"])
    assert "0" in merged["failures"]  # rank 0 was stopped too, and still reported
    assert "[rank 1] TS120 ddp-parameter-without-gradient" in result.stderr


SHARDED = textwrap.dedent(
    """
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    mesh = init_device_mesh("cpu", (2,))
    torch.manual_seed(0)
    with torch.device("meta"):  # a dry run of the shapes, on no data and with no optimizer
        dry = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    for _ in range(2):
        F.cross_entropy(dry(torch.randn(4, 8, device="meta")), torch.zeros(4, dtype=torch.long, device="meta")).backward()
    sharded_model = fully_shard(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)), mesh=mesh)
    optimizer = torch.optim.SGD(sharded_model.parameters(), lr=0.1)
    for step in range(4):
        x, y = torch.randn(4, 8), torch.randint(0, 3, (4,))
        if rank == 1 and step == 3:
            x[0, 0] = float("nan")
        optimizer.zero_grad()
        loss = F.cross_entropy(sharded_model(x), y)  # FORWARD
        loss.backward()
        optimizer.step()  # STEP
    assert sharded_model[0].weight.to_local().shape == (8, 8)  # really sharded across the 2 ranks
    dist.destroy_process_group()
    """
)


def test_torchrun_fsdp2_shards_are_judged_per_rank_after_a_meta_dry_run(tmp_path):
    """DTensor parameters and gradients sharded over 2 gloo ranks: each rank judges
    its own shard; the meta dry run before is neither an internal error nor a finding."""
    if not hasattr(pytest.importorskip("torch.distributed.fsdp"), "fully_shard"):
        pytest.skip("this torch has no FSDP2")
    (tmp_path / "train.py").write_text(SHARDED)
    result, _ = torchrun(tmp_path, "-m", "torchlint", "run", "--report", "report.json", "train.py")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "internal error" not in result.stderr
    merged = json.loads((tmp_path / "report.json").read_text())
    found = {(f["code"], f["lineno"], tuple(f["ranks"])) for f in merged["findings"]}
    assert found == {("TS104", line(SHARDED, "# FORWARD"), (1,)), ("TS111", line(SHARDED, "# STEP"), (0, 1))}
    by_code = {f["code"]: f for f in merged["findings"]}
    assert "argument 0 of sharded_model contains 1 NaN of 32 elements" in by_code["TS104"]["message"]
    assert "sharded_model.0.weight" in by_code["TS111"]["message"]
