"""Overhead of torchlint.sanitize() on CPU training steps.

Times a small MLP (batch 64, 784-256-256-10) and a small CNN (two conv layers
on 32x32 inputs) in one process, interleaving the configurations round by
round so that machine noise hits all of them alike, and prints the best and
the median ms/step with the ratios to plain training and to anomaly mode alone:

    plain                        no sanitizer
    anomaly alone                torch.autograd.set_detect_anomaly(True) (torch's full stacks)
    sanitize()                   all defaults: anomaly="auto" (one recorded line per autograd node;
                                 escalation to full anomaly mode only after non-finite gradients)
    sanitize(check_nan=False)    the same with the NaN escalation disarmed: equal cost on a clean
                                 run, since escalation does nothing until gradients go non-finite
    sanitize(anomaly='full')     torch's anomaly mode on every step and every backward watched
                                 node by node for NaN (check_nan without raising)
    sanitize(anomaly=False)      all checks except anomaly mode
    ...training_checks=False     the same without TS106-TS113 (their cost is the difference)
    sanitize(inplace='always')   the defaults plus the TS105 in-place check (its function mode and
                                 saved-tensor hooks), which is on by default on CUDA

Targets: issue 14, sanitize() <= 1.4x plain on the MLP and <= 1.15x on the CNN, and
the escalation free on a clean run (sanitize() / sanitize(check_nan=False) ~ 1.00);
issue 5, sanitize(anomaly=False) <= 1.25x plain on the MLP and <= 1.15x on the CNN.
The in-place check's own cost (sanitize(inplace='always') / sanitize()) is printed too.

    python bench/sanitizer_overhead.py [--rounds 15] [--steps 10] [--model mlp|cnn|both] [--clock cpu|wall]

The default clock is the process's CPU time (with one intra-op thread): on a
shared machine, other processes inflate wall time unevenly; ``--clock wall``
measures wall time instead.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

import torchlint

torch.set_num_threads(1)  # steadier numbers; the ratios are what matter


def make_mlp():
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    return model, (torch.randn(64, 784), torch.randint(0, 10, (64,)))


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 8 * 8, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


def make_cnn():
    return SmallCNN(), (torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,)))


@contextlib.contextmanager
def anomaly_alone():
    torch.autograd.set_detect_anomaly(True)
    try:
        yield
    finally:
        torch.autograd.set_detect_anomaly(False)


CONFIGS = {
    "plain": contextlib.nullcontext,
    "anomaly alone": anomaly_alone,
    "sanitize()": lambda: torchlint.sanitize(summary=False),
    "sanitize(check_nan=False)": lambda: torchlint.sanitize(check_nan=False, summary=False),
    "sanitize(anomaly='full')": lambda: torchlint.sanitize(anomaly="full", summary=False),
    "sanitize(anomaly=False)": lambda: torchlint.sanitize(anomaly=False, summary=False),
    "  ...training_checks=False": lambda: torchlint.sanitize(anomaly=False, training_checks=False, summary=False),
    "sanitize(inplace='always')": lambda: torchlint.sanitize(inplace="always", summary=False),
}


clock = time.process_time


def time_steps(model, optimizer, batch, steps: int) -> float:
    x, y = batch
    start = clock()
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    return (clock() - start) / steps * 1e3


def bench(name: str, make, rounds: int, steps: int) -> dict[str, float]:
    torch.manual_seed(0)
    model, batch = make()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    samples: dict[str, list[float]] = {config: [] for config in CONFIGS}
    for context in CONFIGS.values():  # warm-up, also of each session's first use
        with context():
            time_steps(model, optimizer, batch, 3)
    for _ in range(rounds):
        for config, context in CONFIGS.items():
            gc.collect()  # a collection pending from the previous block must not land in this one
            with context():
                samples[config].append(time_steps(model, optimizer, batch, steps))
    medians = {config: statistics.median(values) for config, values in samples.items()}
    best = {config: min(values) for config, values in samples.items()}
    print(f"\n{name}: {rounds} interleaved rounds x {steps} steps, ms/step (ratio to plain, to anomaly alone)")
    print(
        f"  {'configuration':28} {'best':>8} {'x plain':>8} {'x anom.':>8}   {'median':>8} {'x plain':>8} {'x anom.':>8}"
    )
    for config in CONFIGS:
        cells = []
        for table in (best, medians):
            value = table[config]
            cells.append(f"{value:8.3f} {value / table['plain']:8.2f} {value / table['anomaly alone']:8.2f}")
        print(f"  {config:28} {cells[0]}   {cells[1]}")
    return {"best": best, "median": medians}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--model", choices=("mlp", "cnn", "both"), default="both")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    args = parser.parse_args()
    global clock
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {args.clock} time")
    results = {}
    if args.model in ("mlp", "both"):
        results["MLP"] = bench("MLP 784-256-256-10, batch 64", make_mlp, args.rounds, args.steps)
    if args.model in ("cnn", "both"):
        results["CNN"] = bench("CNN 2 conv on 32x32, batch 32", make_cnn, args.rounds, args.steps)
    print("\ntargets (best of rounds; noise on a shared machine only ever adds time):")
    for name, tables in results.items():
        best = tables["best"]
        plain = best["plain"]
        checks = [
            ("sanitize()", best["sanitize()"] / plain, {"MLP": 1.4, "CNN": 1.15}[name], "plain (issue 14)"),
            (
                "sanitize(anomaly=False)",
                best["sanitize(anomaly=False)"] / plain,
                {"MLP": 1.25, "CNN": 1.15}[name],
                "plain (issue 5)",
            ),
            ("escalation armed", best["sanitize()"] / best["sanitize(check_nan=False)"], 1.10, "disarmed (noise only)"),
        ]
        for label, ratio, target, against in checks:
            print(
                f"  {name}: {label} {ratio:.2f}x {against}, target <= {target} {'ok' if ratio <= target else 'MISSED'}"
            )
        inplace = best["sanitize(inplace='always')"] / best["sanitize()"]
        full = best["sanitize(anomaly='full')"] / best["anomaly alone"]
        print(
            f"  {name}: the in-place check costs {inplace:.2f}x the defaults; "
            f"anomaly='full' is {full:.2f}x torch's anomaly mode alone"
        )


if __name__ == "__main__":
    main()
