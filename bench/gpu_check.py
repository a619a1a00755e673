"""One short check of the sanitizer on a CUDA device (issues 11 and 14), under 3 minutes.

Prints, on a small residual CNN and a small GPT-style Transformer:

1. the cost of the CUDA defaults, whose in-place check (TS105) switches on by
   itself at the first CUDA tensor: ms/step of plain training, ``sanitize()``,
   ``sanitize(inplace="never")`` (the defaults without the in-place check),
   ``sanitize(anomaly="full")`` and ``sanitize(anomaly=False)``, interleaved
   round by round, with the findings of the clean runs (expected: none);
2. the accelerator path of TS104 (device-side sums, one host sync per step):
   a ``-inf`` causal mask and ``-inf``-masked logits are no finding, a NaN batch
   is one finding counted once, a mask hiding every position is reported;
3. an in-place write through ``.data`` into a saved tensor, which the CUDA
   default reports (TS105) at the line of the write;
4. a double backward (gradient penalty), whose nodes CUDA creates on threads
   without a Python frame: no crash, no finding;
5. NaN made in backward (sqrt at 0): ``anomaly="auto"`` pins the op one step
   later, ``anomaly="full"`` at once, with the time of each run.

    python bench/gpu_check.py                 # on cuda:0
    python bench/gpu_check.py --device cpu    # a dry run on the CPU (CUDA code paths via accelerator_devices)
"""

from __future__ import annotations

import argparse
import contextlib
import math
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

import torchlint

DEVICE = torch.device("cuda")
OPTIONS: dict = {}  # extra sanitize() options (the CPU dry run treats "cpu" as an accelerator)


def sync() -> None:
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


class Block(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += x
        return self.relu(out)


class ResNetSmall(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True))
        self.blocks = nn.Sequential(Block(32), Block(32), nn.MaxPool2d(2), Block(32))
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1).flatten(1))


class GPTSmall(nn.Module):
    def __init__(self, vocab: int = 64, width: int = 128, heads: int = 4, layers: int = 4):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.1, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, vocab)

    def forward(self, idx, mask):
        return self.head(self.blocks(self.embed(idx), mask=mask))


def cnn_task():
    model = ResNetSmall().to(DEVICE)
    batch = torch.randn(64, 3, 32, 32, device=DEVICE), torch.randint(0, 10, (64,), device=DEVICE)

    def loss_of(model, batch):
        return F.cross_entropy(model(batch[0]), batch[1])

    return model, batch, loss_of


def gpt_task():
    model = GPTSmall().to(DEVICE)
    idx = torch.randint(0, 64, (16, 64), device=DEVICE)
    mask = nn.Transformer.generate_square_subsequent_mask(64, device=DEVICE)

    def loss_of(model, batch):
        logits = model(batch[0], mask)
        logits = logits.masked_fill(torch.arange(64, device=DEVICE) >= 60, float("-inf"))  # never predicted
        return F.cross_entropy(logits[:, :-1].flatten(0, 1), (batch[0][:, 1:] % 60).flatten())

    return model, (idx,), loss_of


CONFIGS = {
    "plain": contextlib.nullcontext,
    "sanitize() [CUDA default]": lambda: torchlint.sanitize(summary=False, action="record", **OPTIONS),
    "sanitize(inplace='never')": lambda: torchlint.sanitize(summary=False, action="record", inplace="never", **OPTIONS),
    "sanitize(anomaly='full')": lambda: torchlint.sanitize(summary=False, action="record", anomaly="full", **OPTIONS),
    "sanitize(anomaly=False)": lambda: torchlint.sanitize(summary=False, action="record", anomaly=False, **OPTIONS),
}


def steps(model, optimizer, batch, loss_of, n: int) -> float:
    sync()
    start = time.perf_counter()
    for _ in range(n):
        optimizer.zero_grad(set_to_none=True)
        loss_of(model, batch).backward()
        optimizer.step()
    sync()
    return (time.perf_counter() - start) / n * 1e3


def overhead(name: str, task, rounds: int, n: int) -> None:
    torch.manual_seed(0)
    model, batch, loss_of = task()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    samples: dict[str, list[float]] = {config: [] for config in CONFIGS}
    findings: dict[str, list[str]] = {}
    for context in CONFIGS.values():  # warm-up (cuDNN autotuning, first-session costs)
        with context():
            steps(model, optimizer, batch, loss_of, 3)
    for _ in range(rounds):
        for config, context in CONFIGS.items():
            with context() as report:
                samples[config].append(steps(model, optimizer, batch, loss_of, n))
            if report is not None:
                findings[config] = [f"{f.code}@{f.lineno} x{f.count}" for f in report.findings] + report.notes
    print(f"\n{name}: {rounds} interleaved rounds x {n} steps, ms/step")
    print(f"  {'configuration':28} {'best':>8} {'x plain':>8} {'median':>8} {'x plain':>8}  findings")
    best_plain, median_plain = min(samples["plain"]), statistics.median(samples["plain"])
    for config, values in samples.items():
        best, median = min(values), statistics.median(values)
        found = ", ".join(findings.get(config, [])) or "none"
        print(f"  {config:28} {best:8.3f} {best / best_plain:8.2f} {median:8.3f} {median / median_plain:8.2f}  {found}")
    inplace = min(samples["sanitize() [CUDA default]"]) / min(samples["sanitize(inplace='never')"])
    print(f"  the in-place check costs {inplace:.2f}x the defaults without it")


def ts104_accelerator_path() -> None:
    print("\nTS104 on the accelerator path (device-side sums, one host sync per optimizer step):")
    torch.manual_seed(0)
    model, batch, loss_of = gpt_task()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    session = torchlint.sanitize(summary=False, action="record", **OPTIONS)
    with session as report:
        check = next(c for c in session.checks if type(c).__name__ == "NonfiniteCheck")
        for _ in range(5):
            optimizer.zero_grad()
            loss_of(model, batch).backward()
            optimizer.step()
        syncs = check.syncs
    print(f"  causal -inf mask + masked logits, 5 steps: findings {[f.code for f in report.findings]}, {syncs} syncs")

    torch.manual_seed(0)
    model, batch, loss_of = cnn_task()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with torchlint.sanitize(summary=False, action="record", **OPTIONS) as report:
        for step in range(6):
            x = batch[0].clone()
            if step == 2:
                x[0, 0, 0, 0] = float("nan")
            optimizer.zero_grad()
            F.cross_entropy(model(x), batch[1]).backward()
            optimizer.step()
    print(f"  one NaN batch, 6 steps: {[(f.code, f.count) for f in report.findings]} (expected TS104 x1, TS111 x1)")

    class Manual(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(32, 96)

        def forward(self, x, mask):
            q, k, v = self.qkv(x).chunk(3, -1)
            return ((q @ k.transpose(1, 2)) / math.sqrt(32) + mask).softmax(-1) @ v

    manual = Manual().to(DEVICE)
    hides_all = torch.full((8, 8), float("-inf"), device=DEVICE)
    with torchlint.sanitize(summary=False, action="record", training_checks=False, **OPTIONS) as report:
        manual(torch.randn(2, 8, 32, device=DEVICE), hides_all).sum().backward()
    print(f"  a mask hiding every position: {[(f.code, f.details.get('argument')) for f in report.findings]}")


class DataWrite(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(32, 64), nn.Linear(64, 10)

    def forward(self, x):
        h = torch.sigmoid(self.fc1(x))
        h.data.mul_(0.5)  # the write (silently wrong gradients)
        return self.fc2(h)


def ts105_default() -> None:
    torch.manual_seed(0)
    model = DataWrite().to(DEVICE)
    with torchlint.sanitize(summary=False, action="record", **OPTIONS) as report:
        F.cross_entropy(
            model(torch.randn(8, 32, device=DEVICE)), torch.zeros(8, dtype=torch.long, device=DEVICE)
        ).backward()
    print("\nTS105 with the CUDA defaults, a write through .data into a saved tensor:")
    for f in report.findings:
        print(f"  {f.code} at line {f.lineno}: {f.message[:150]}")


class Distances(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x):
        v = self.proj(x) * (x.abs().sum(1, keepdim=True) > 0)
        squared = (v * v).sum(1)
        return torch.where(squared > 0, squared.sqrt(), torch.zeros_like(squared))  # sqrt at 0: NaN in backward


def nan_in_backward() -> None:
    print("\nNaN made in backward (sqrt at 0 from step 3), anomaly auto vs full:")
    for anomaly in ("auto", "full"):
        torch.manual_seed(0)
        model = Distances().to(DEVICE)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        sync()
        start = time.perf_counter()
        with torchlint.sanitize(summary=False, action="record", anomaly=anomaly, **OPTIONS) as report:
            for step in range(8):
                x = torch.randn(64, 16, device=DEVICE)
                if step >= 3:
                    x[0] = 0
                optimizer.zero_grad()
                F.mse_loss(model(x), torch.ones(64, device=DEVICE)).backward()
                optimizer.step()
        sync()
        seconds = time.perf_counter() - start
        pinned = report.by_code("TS101")
        where = (
            f"line {pinned[0].lineno} ({pinned[0].details['node']}), backward pass {pinned[0].details['backward_pass']}"
            if pinned
            else "not pinned"
        )
        print(f"  anomaly={anomaly!r}: {where}; {seconds * 1e3:.0f} ms for 8 steps")


def double_backward() -> None:
    """A WGAN-GP gradient penalty: backward creates autograd nodes on CUDA's device threads,
    which have no Python frame (the forward-line recorder must cope)."""
    torch.manual_seed(0)
    critic = nn.Sequential(nn.Linear(16, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1)).to(DEVICE)
    with torchlint.sanitize(summary=False, action="record", **OPTIONS) as report:
        for _ in range(3):
            x = torch.randn(32, 16, device=DEVICE, requires_grad=True)
            (grad,) = torch.autograd.grad(critic(x).sum(), x, create_graph=True)
            ((grad.norm(2, dim=1) - 1) ** 2).mean().backward()
    print(f"\ndouble backward (gradient penalty) under the defaults: findings {[f.code for f in report.findings]}")


def main() -> None:
    global DEVICE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    DEVICE = torch.device(args.device)
    if DEVICE.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: run with --device cpu for a dry run")
    if DEVICE.type != "cuda":
        OPTIONS["accelerator_devices"] = (DEVICE.type,)
    name = torch.cuda.get_device_name(DEVICE) if DEVICE.type == "cuda" else DEVICE.type
    print(f"torch {torch.__version__}, torchlint {torchlint.__version__}, device {name}")
    start = time.perf_counter()
    overhead("ResNet-style CNN, batch 64 of 3x32x32", cnn_task, args.rounds, args.steps)
    overhead("GPT-style Transformer, 4 layers, width 128, batch 16x64", gpt_task, args.rounds, args.steps)
    ts104_accelerator_path()
    ts105_default()
    double_backward()
    nan_in_backward()
    print(f"\ntotal {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
