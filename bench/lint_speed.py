"""How fast is the linter? Prints each figure and its ratio to a plain ``ast.parse`` pass
over the same files, measured in the same run.

    python bench/lint_speed.py                 # on generated training code (200 files, ~60k lines)
    python bench/lint_speed.py /work/audit     # on any folder of Python files
    python bench/lint_speed.py --files 400 --rules   # bigger corpus, plus the cost of each rule

Figures:
  * fresh-process wall time of `torchlint --version` and of linting one ~300-line script
    (targets: under 0.25 s each), beside a bare `python -c pass` and a fresh-process ast.parse;
  * single-core throughput in lines/s of read+lint over the corpus (target: >= 10,000),
    beside read+ast.parse;
  * `torchlint --jobs 1 DIR` versus `--jobs 2 DIR` wall time (target: --jobs 2 faster);
  * with --rules: seconds per rule over the corpus, to find a slow rule.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# The console script's own code, so a fresh process costs what `torchlint` costs.
ENTRY = "import sys; from torchlint.cli import main; sys.exit(main())"


# ----- a corpus of realistic training code ---------------------------------------------------

PARTS = {
    "header": '''\
"""Train a {model_kind} on {dataset}."""
import argparse
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
{extra_imports}
''',
    "config": """\

def parse_args():
    parser = argparse.ArgumentParser(description="{model_kind} training")
    parser.add_argument("--data", default="./data")
    parser.add_argument("--epochs", type=int, default={epochs})
    parser.add_argument("--batch-size", type=int, default={batch})
    parser.add_argument("--lr", type=float, default={lr})
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--grad-accum", type=int, default={accum})
    parser.add_argument("--amp", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="checkpoints")
    return parser.parse_args()
""",
    "dataset": """\

class {name}Dataset(Dataset):
    def __init__(self, root, split="train", length={length}):
        self.root = root
        self.split = split
        self.length = length
        self.inputs = torch.randn(length, {features})
        self.targets = torch.randint(0, {classes}, (length,))

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        x = self.inputs[index]
        if self.split == "train":
            x = x + 0.01 * torch.randn_like(x)
        return x, self.targets[index]
""",
    "block": """\

class {name}Block(nn.Module):
    def __init__(self, dim, hidden, dropout={dropout}):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        residual = x
        x = self.norm(x)
        x = F.gelu(self.fc1(x))
        x = self.drop(x)
        x = self.fc2(x)
        return residual + self.drop(x)
""",
    "model": """\

class {name}(nn.Module):
    def __init__(self, features={features}, dim={dim}, depth={depth}, classes={classes}):
        super().__init__()
        self.embed = nn.Linear(features, dim)
        self.blocks = nn.ModuleList([{block}Block(dim, dim * 4) for _ in range(depth)])
        self.head = nn.Linear(dim, classes)
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.trunc_normal_(module.weight, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)

    def forward(self, x):
        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x)
""",
    "schedule": """\

def lr_at(step, base_lr, warmup, total):
    if step < warmup:
        return base_lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return base_lr * 0.5 * (1.0 + math.cos(math.pi * progress))
""",
    "evaluate": """\

@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    total, correct, loss_sum = 0, 0, 0.0
    for inputs, targets in loader:
        inputs, targets = inputs.to(device), targets.to(device)
        logits = model(inputs)
        loss_sum += F.cross_entropy(logits, targets, reduction="sum").item()
        correct += (logits.argmax(dim=1) == targets).sum().item()
        total += targets.numel()
    model.train()
    return loss_sum / max(total, 1), correct / max(total, 1)
""",
    "train_plain": """\

def train_one_epoch(model, loader, optimizer, scheduler, device, epoch, log_every={log}):
    model.train()
    start = time.time()
    for step, (inputs, targets) in enumerate(loader):
        inputs = inputs.to(device, non_blocking=True)
        targets = targets.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        logits = model(inputs)
        loss = F.cross_entropy(logits, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), {clip})
        optimizer.step()
        scheduler.step()
        if step % log_every == 0:
            elapsed = time.time() - start
            print(f"epoch {{epoch}} step {{step}} loss {{loss.item():.4f}} ({{elapsed:.1f}}s)")
""",
    "train_amp": """\

def train_one_epoch(model, loader, optimizer, scaler, device, epoch, accum_steps=1):
    model.train()
    optimizer.zero_grad(set_to_none=True)
    for step, (inputs, targets) in enumerate(loader):
        inputs, targets = inputs.to(device), targets.to(device)
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            logits = model(inputs)
            loss = F.cross_entropy(logits, targets) / accum_steps
        scaler.scale(loss).backward()
        if (step + 1) % accum_steps == 0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), {clip})
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
        if step % {log} == 0:
            print(f"epoch {{epoch}} step {{step}} loss {{loss.item() * accum_steps:.4f}}")
""",
    "meter": '''\

class AverageMeter:
    """Running average of a scalar, for logging."""

    def __init__(self, name, fmt=":.4f"):
        self.name = name
        self.fmt = fmt
        self.reset()

    def reset(self):
        self.value = 0.0
        self.sum = 0.0
        self.count = 0

    def update(self, value, n=1):
        self.value = value
        self.sum += value * n
        self.count += n

    @property
    def average(self):
        return self.sum / max(self.count, 1)

    def __str__(self):
        return f"{{self.name}} {{self.value{fmt}}} ({{self.average{fmt}}})"


def accuracy(output, target, topk=(1,)):
    maxk = max(topk)
    batch_size = target.size(0)
    _, pred = output.topk(maxk, 1, True, True)
    pred = pred.t()
    correct = pred.eq(target.view(1, -1).expand_as(pred))
    result = []
    for k in topk:
        correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
        result.append(correct_k.mul_(100.0 / batch_size))
    return result


def set_seed(seed):
    import random

    random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
''',
    "checkpoint": """\

def save_checkpoint(model, optimizer, epoch, path):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    state = {{
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "epoch": epoch,
    }}
    torch.save(state, path)


def load_checkpoint(model, optimizer, path, device):
    state = torch.load(path, map_location=device)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return state["epoch"] + 1
""",
    "main": """\

def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train_set = {dataset}Dataset(args.data, "train")
    val_set = {dataset}Dataset(args.data, "val", length=512)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True, num_workers=2)
    val_loader = DataLoader(val_set, batch_size=args.batch_size)
    model = {model}().to(device)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    optimizer = torch.optim.{optimizer}(
        [{{"params": decay, "weight_decay": args.weight_decay}}, {{"params": no_decay, "weight_decay": 0.0}}],
        lr=args.lr,
    )
    total = args.epochs * len(train_loader)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: lr_at(step, 1.0, args.warmup, total)
    )
    {scaler_line}
    start_epoch = 0
    if os.path.exists(os.path.join(args.out, "last.pt")):
        start_epoch = load_checkpoint(model, optimizer, os.path.join(args.out, "last.pt"), device)
    best = 0.0
    for epoch in range(start_epoch, args.epochs):
        {train_call}
        val_loss, val_acc = evaluate(model, val_loader, device)
        print(f"epoch {{epoch}}: val loss {{val_loss:.4f}} acc {{val_acc:.3f}}")
        if val_acc > best:
            best = val_acc
            save_checkpoint(model, optimizer, epoch, os.path.join(args.out, "best.pt"))
        save_checkpoint(model, optimizer, epoch, os.path.join(args.out, "last.pt"))


if __name__ == "__main__":
    main()
""",
}


def training_script(seed: int) -> str:
    """One ~300-line training script; names, sizes and the loop style vary with the seed."""
    rng = random.Random(seed)
    kind = rng.choice(["MLP", "Mixer", "Tabular", "Residual", "Probe"])
    dataset = rng.choice(["Synthetic", "Sensor", "Clicks", "Spectra"])
    amp = rng.random() < 0.5
    fields = dict(
        model_kind=kind.lower(),
        dataset=dataset,
        epochs=rng.choice([3, 10, 90]),
        batch=rng.choice([32, 64, 256]),
        lr=rng.choice([1e-3, 3e-4, 0.1]),
        accum=rng.choice([1, 2, 4]),
        length=rng.choice([4096, 10000]),
        features=rng.choice([16, 32, 128]),
        classes=rng.choice([2, 10, 100]),
        dropout=rng.choice([0.0, 0.1]),
        dim=rng.choice([64, 128, 256]),
        depth=rng.choice([2, 4, 6]),
        log=rng.choice([10, 50, 100]),
        clip=rng.choice([0.5, 1.0]),
        optimizer=rng.choice(["AdamW", "SGD", "Adam"]),
        extra_imports="from torch.amp import GradScaler\n" if amp else "",
    )
    parts = [PARTS["header"].format(**fields), PARTS["config"].format(**fields)]
    blocks = []
    for i in range(rng.choice([4, 5, 6])):
        name = f"{kind}{i}"
        blocks.append(name)
        parts.append(PARTS["block"].format(name=name, **fields))
    parts.append(PARTS["dataset"].format(name=dataset, **fields))
    parts.append(PARTS["model"].format(name=f"{kind}Net", block=rng.choice(blocks), **fields))
    parts += [PARTS["schedule"], PARTS["meter"].format(fmt=":.4f"), PARTS["evaluate"]]
    parts.append(PARTS["train_amp" if amp else "train_plain"].format(**fields))
    parts.append(PARTS["checkpoint"].format())
    if amp:
        scaler_line, train_call = (
            "scaler = GradScaler()",
            "train_one_epoch(model, train_loader, optimizer, scaler, device, epoch, "
            "args.grad_accum)\n        scheduler.step()",
        )
    else:
        scaler_line, train_call = ("", "train_one_epoch(model, train_loader, optimizer, scheduler, device, epoch)")
    parts.append(PARTS["main"].format(model=f"{kind}Net", scaler_line=scaler_line, train_call=train_call, **fields))
    return "".join(parts)


def generate(directory: Path, count: int) -> list[Path]:
    paths = []
    for i in range(count):
        sub = directory / f"project{i % 10}"
        sub.mkdir(parents=True, exist_ok=True)
        path = sub / f"train_{i:04}.py"
        path.write_text(training_script(i))
        paths.append(path)
    return paths


# ----- measurements ---------------------------------------------------------------------------


def corpus(folder: Path) -> list[tuple[Path, bytes]]:
    from torchlint.engine import config
    from torchlint.engine.files import discover

    return [(Path(t.path), Path(t.path).read_bytes()) for t in discover([str(folder)], config.find_settings)]


def _cpu(children: bool) -> float:
    if children:
        import resource

        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime
    return time.process_time()


def best_of(fn, repeat, children=False):
    """(wall, cpu) seconds of the fastest of ``repeat`` runs. CPU time (of this process, or of
    finished child processes) is reported too because it moves far less on a busy machine."""
    best = None
    for _ in range(repeat):
        start, cpu_start = time.perf_counter(), _cpu(children)
        fn()
        wall, cpu = time.perf_counter() - start, _cpu(children) - cpu_start
        if best is None or wall < best[0]:
            best = (wall, cpu)
    return best


def subprocess_env() -> dict:
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    # Some sandboxes set this; a real install writes .pyc files, so measure with them.
    if env.pop("PYTHONDONTWRITEBYTECODE", None):
        env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "torchlint-bench-pyc")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_fresh(args, env, repeat=7):
    """(wall, cpu) seconds of the fastest fresh `python ARGS` process."""
    cmd = [sys.executable, *args]
    subprocess.run(cmd, env=env, capture_output=True)  # warm the file cache and write .pyc files
    return best_of(lambda: subprocess.run(cmd, env=env, capture_output=True), repeat, children=True)


def line_count(files) -> int:
    return sum(data.count(b"\n") for _, data in files)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", help="lint this folder instead of generated code")
    parser.add_argument("--files", type=int, default=200, help="generated files (default: 200, ~300 lines each)")
    parser.add_argument("--rules", action="store_true", help="also time each rule on its own")
    parser.add_argument("--repeat", type=int, default=7, help="fresh-process runs per figure (min is shown)")
    args = parser.parse_args(argv)

    from torchlint.engine.lint import lint_bytes
    from torchlint.engine.rule import all_rules

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.folder) if args.folder else Path(tmp) / "corpus"
        if not args.folder:
            generate(folder, args.files)
        files = corpus(folder)
        lines = line_count(files)
        rules = list(all_rules().values())
        env = subprocess_env()
        print(
            f"corpus: {len(files)} files, {lines:,} lines ({folder}); {len(rules)} rules; "
            f"python {sys.version.split()[0]}; {os.cpu_count()} CPUs"
        )

        # A ~300-line script for the fresh-process figures.
        one = Path(tmp) / "one_script.py"
        one.write_text(training_script(0))
        one_lines = one.read_text().count("\n")

        print(f"\n{'figure':<48}  {'wall':>16}  {'cpu':>16}  wall ratio to ast.parse", flush=True)

        def emit(label, wall, cpu, ratio):
            print(f"{label:<48}  {wall:>16}  {cpu:>16}  {ratio}", flush=True)

        def row(label, timing, baseline):
            emit(label, f"{timing[0]:.3f} s", f"{timing[1]:.3f} s", f"{timing[0] / baseline[0]:.2f}x")

        # ----- fresh processes
        bare = run_fresh(["-c", "pass"], env, args.repeat)
        parse_one = run_fresh(["-c", f"import ast; ast.parse(open({str(one)!r}).read())"], env, args.repeat)
        version = run_fresh(["-c", ENTRY, "--version"], env, args.repeat)
        lint_one = run_fresh(["-c", ENTRY, "--no-color", "--no-cache", str(one)], env, args.repeat)
        row("python -c pass (interpreter start)", bare, parse_one)
        row(f"fresh python: ast.parse one {one_lines}-line file", parse_one, parse_one)
        row("fresh torchlint --version", version, parse_one)
        row(f"fresh torchlint one {one_lines}-line script", lint_one, parse_one)

        # ----- single-core throughput, in process
        def parse_all():
            for _path, data in files:
                try:
                    ast.parse(data)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    pass

        def lint_all():
            for path, data in files:
                lint_bytes(data, str(path), rules)

        # Interleaved, so a change in machine load hits both sides alike.
        parse_runs, lint_runs = [], []
        for _ in range(3):
            parse_runs.append(best_of(parse_all, 1))
            lint_runs.append(best_of(lint_all, 1))
        parse_s, lint_s = min(parse_runs), min(lint_runs)

        def rate(timing):
            return f"{lines / timing[0]:,.0f} lines/s", f"{lines / timing[1]:,.0f} lines/s"

        emit("ast.parse throughput (1 core)", *rate(parse_s), "1.00x")
        emit("torchlint throughput (1 core)", *rate(lint_s), f"{parse_s[0] / lint_s[0]:.2f}x (of its speed)")

        # ----- whole command, one versus two processes
        jobs = {}
        for n in (1, 2):
            jobs[n] = run_fresh(
                ["-c", ENTRY, "-q", "--exit-zero", "--no-cache", "--jobs", str(n), str(folder)],
                env,
                max(2, args.repeat // 3),
            )
            row(f"torchlint --jobs {n} DIR", jobs[n], parse_s)
        emit("--jobs 2 speed-up over --jobs 1 (wall)", f"{jobs[1][0] / jobs[2][0]:.2f}x", "", "")

        if args.rules:
            per_rule(files, rules, lines)
    return 0


def build_shared_training_facts(ctx) -> None:
    """The lazily built parts of the PyTorch model (``torchlint/torchmodel/``) most rules use."""
    from torchlint.torchmodel.iterations import iterations
    from torchlint.torchmodel.roles import object_roles

    roles, loops = object_roles(ctx), iterations(ctx)
    for fact in (lambda: roles.used_as, lambda: roles.optimizer_models, lambda: loops.step_units):
        try:
            fact()
        except Exception:
            pass


def per_rule(files, rules, lines):
    """Seconds each rule spends over the corpus, after the shared context is built."""
    from torchlint.analysis.context import FileContext
    from torchlint.engine.lint import decode

    cost = {rule.code: 0.0 for rule in rules}
    index = parse = model = 0.0
    for path, data in files:
        text, failure = decode(data, str(path))
        if text is None:
            continue
        start = time.perf_counter()
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        mid = time.perf_counter()
        ctx = FileContext(str(path), text, tree)
        _ = ctx.imports  # shared facts every rule uses: not charged to the first rule that asks
        end = time.perf_counter()
        parse += mid - start
        index += end - mid
        start = time.perf_counter()
        build_shared_training_facts(ctx)  # the shared training-code model, charged on its own line
        model += time.perf_counter() - start
        for rule in rules:
            start = time.perf_counter()
            try:
                for _ in rule().check(ctx):
                    pass
            except Exception:
                pass
            cost[rule.code] += time.perf_counter() - start
    print(f"\nper-rule cost over {lines:,} lines (the first rule to use a shared model pays for building it)")
    print(f"  ast.parse      {parse:7.3f} s")
    print(f"  context index  {index:7.3f} s  ({index / parse:.2f}x ast.parse)")
    print(f"  training model {model:7.3f} s  ({model / parse:.2f}x ast.parse)")
    for code, seconds in sorted(cost.items(), key=lambda item: -item[1]):
        print(f"  {code}          {seconds:7.3f} s  ({seconds / parse:.2f}x ast.parse)")


if __name__ == "__main__":
    raise SystemExit(main())
