"""TL021 distributed-without-sampler."""

from __future__ import annotations

import ast
import re

from torchlint.analysis.callgraph import runs_repeatedly
from torchlint.analysis.imports import dotted_name
from torchlint.engine.rule import Message, Rule, register
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.distributed import (
    built_outside_ranks,
    data_parallel_call,
    seeds_per_rank,
    selected_by_rank,
    starts_process_group,
)
from torchlint.torchmodel.iterations import iterations
from torchlint.torchmodel.scripts import (
    EVAL_WORDS,
    TRAIN_WORDS,
    LoaderCall,
    bound_name,
    dataloader_calls,
    is_distributed_sampler,
    loops_over,
    names_in,
    resolve_value,
)

# A branch on one of these decides between the distributed and the single-process setup.
_DISTRIBUTED_WORDS = re.compile(r"distributed|ddp|world_size|rank|multi_?gpu|is_initialized", re.I)
# Datasets that shard themselves per rank need no sampler.
_SHARDING_WORDS = re.compile(r"rank|world_size|num_replicas|shard|split_dataset_by_node", re.I)
# Frameworks that replace the sampler of the loaders handed to them.
_PREPARE_METHODS = frozenset({"prepare", "prepare_data_loader", "setup_dataloaders", "fit"})


@register
class DistributedWithoutSampler(Rule):
    code = "TL021"
    name = "distributed-without-sampler"
    severity = "warning"
    summary = "A distributed training script gives every rank the same data."
    what = """
        In a file that trains one model data-parallel (wraps it in `DistributedDataParallel`
        or FSDP, or all-reduces parameter gradients itself), reports the training
        `DataLoader(...)` (one with `shuffle=True`, named or built from something named
        "train", or iterated by a training loop of the file) when it has no
        `sampler=`/`batch_sampler=`; in a file that starts a process group or trains
        data-parallel, reports a `DataLoader` whose `DistributedSampler` is never told the
        epoch (no `.set_epoch(epoch)` anywhere in the file). Evaluation loaders, datasets
        that shard themselves by rank or are selected by rank
        (`Subset(ds, range(rank * n, (rank + 1) * n))`), shuffling loaders in a file that seeds torch from the
        rank (`torch.manual_seed(seed + rank)`: each rank shuffles its own way), loaders built
        in `if args.distributed:`-style branches or in the branch whose other side sets up
        the distributed run (`if args.multinpu: ...DistributedSampler... else:`), and loaders that a framework re-samples
        (handed to `accelerator.prepare` / `fabric.setup_dataloaders`, returned by a
        Lightning `*_dataloader` hook) are not reported, nor are loaders built and read only by
        code that no rank runs (a walkthrough's single-process sections, a plain or
        `nn.DataParallel` model, before the DDP `main(rank)` of the same file). A process group alone (ranks that
        each train their own networks, evaluate their own checkpoints) needs the whole
        dataset on every rank, and a wrap or process group under a branch that constants
        decide against (`world_size = 1` never rebound, then `if world_size > 1:`) never runs.
    """
    why = """
        Without a `DistributedSampler` each of the N processes iterates the whole dataset:
        an "epoch" is N passes over the same samples (in the very same order when the ranks
        share a seed), gradients are averaged over duplicates, and the run costs N times
        more compute for the progress of one GPU. With a
        `DistributedSampler` whose `set_epoch` is never called, the shuffle is seeded
        identically every epoch, so every epoch visits the data in the same order.
    """
    example = """
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler

        dist.init_process_group("nccl")
        model = DDP(model.to(rank), device_ids=[rank])
        loader = DataLoader(train_set, batch_size=32, shuffle=True)
        for epoch in range(epochs):
            for x, y in loader:
                ...
    """
    instead = """
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler

        dist.init_process_group("nccl")
        model = DDP(model.to(rank), device_ids=[rank])
        sampler = DistributedSampler(train_set)  # shuffles by default
        loader = DataLoader(train_set, batch_size=32, sampler=sampler)
        for epoch in range(epochs):
            sampler.set_epoch(epoch)  # a new shuffle each epoch
            for x, y in loader:
                ...
    """
    VALID = [
        """
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
def main(rank, model, train_set, val_set, opt):
    dist.init_process_group("nccl")
    model = DDP(model, device_ids=[rank])
    sampler = DistributedSampler(train_set)
    loader = DataLoader(train_set, batch_size=32, sampler=sampler)
    val_loader = DataLoader(val_set, batch_size=32)
    for epoch in range(10):
        sampler.set_epoch(epoch)
        for x in loader:
            model(x).mean().backward()
            opt.step()
""",
    ]
    INVALID = [
        """
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
def main(rank, model, train_set, opt):
    dist.init_process_group("nccl")
    model = DDP(model, device_ids=[rank])
    loader = DataLoader(train_set, batch_size=32, shuffle=True)  # expect: TL021
    for epoch in range(10):
        for x in loader:
            model(x).mean().backward()
            opt.step()
""",
        """
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler
def main(model, train_set, opt):
    dist.init_process_group("nccl")
    loader = DataLoader(train_set, batch_size=32, sampler=DistributedSampler(train_set))  # expect: TL021
    for epoch in range(10):
        for x in loader:
            model(x).mean().backward()
            opt.step()
""",
    ]

    def check(self, ctx):
        # A loader without a sampler is wrong only where the ranks train one model on shards of the data;
        # a DistributedSampler is told the epoch wherever processes are started.
        data_parallel = data_parallel_call(ctx) is not None
        if not data_parallel and not starts_process_group(ctx):
            return
        loaders = dataloader_calls(ctx)
        if not loaders:
            return
        sets_epoch = any(isinstance(c.func, ast.Attribute) and c.func.attr == "set_epoch" for c in ctx.calls)
        iterated = _loaders_iterated_by_training_loops(ctx)
        for loader in loaders:
            name = bound_name(ctx, loader.call)
            if not _is_training_loader(ctx, loader, name, iterated) or _framework_managed(ctx, loader, name):
                continue
            # Built and read only by code no rank runs (a tutorial's single-process sections before
            # its DDP `main(rank)`): it feeds a training of one process.
            if built_outside_ranks(ctx, loader.call):
                continue
            if not loader.given("sampler") and not loader.given("batch_sampler"):
                if data_parallel and not _each_rank_differs(ctx, loader):
                    yield self.report(loader.call, self._no_sampler_message(ctx, loader))
                continue
            sampler = is_distributed_sampler(ctx, loader.arg("sampler"))
            if (
                sampler is not None
                and not sets_epoch
                and _shuffles(sampler)
                and iterations(ctx).training_loops
                and not _single_pass(ctx, loader)
            ):
                yield self.report(loader.call, self._no_set_epoch_message(ctx, sampler))

    @staticmethod
    def _no_sampler_message(ctx, loader) -> Message:
        shuffle = loader.arg("shuffle")
        how = "`shuffle=True` and no sampler" if _is_true(shuffle) else "no sampler"
        dataset = ctx.quote(loader.arg("dataset")) if loader.arg("dataset") is not None else "dataset"
        return Message(
            f"this training `DataLoader` has {how} in a distributed (DDP) script",
            why="every rank iterates the whole dataset instead of its own shard",
            help=f"pass `sampler=DistributedSampler({dataset})` (and drop `shuffle=True`), then call "
            "`sampler.set_epoch(epoch)` every epoch",
        )

    @staticmethod
    def _no_set_epoch_message(ctx, sampler) -> Message:
        return Message(
            f"the `{ctx.quote(sampler.func)}` of this training `DataLoader` (line {sampler.lineno}) is never "
            "told the epoch",
            why="no `.set_epoch(epoch)` call in this file, so every epoch is shuffled in the same order",
            help="call `sampler.set_epoch(epoch)` at the start of each epoch",
        )


def _each_rank_differs(ctx, loader: LoaderCall) -> bool:
    """The ranks do not replay one another: the loader is built only for the single-process case, its
    dataset shards itself by rank, or it shuffles with a generator seeded from the rank."""
    if _decided_by_distributed_branch(ctx, loader.call) or _shards_itself(ctx, loader):
        return True
    shuffle = loader.arg("shuffle")
    shuffles = shuffle is not None and not (isinstance(shuffle, ast.Constant) and not shuffle.value)
    return shuffles and seeds_per_rank(ctx)


def _is_true(expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is True


def _shuffles(sampler: ast.Call) -> bool:
    """DistributedSampler shuffles unless given a literal ``shuffle=False``."""
    for keyword in sampler.keywords:
        if keyword.arg == "shuffle":
            return not (isinstance(keyword.value, ast.Constant) and keyword.value.value is False)
    if len(sampler.args) >= 4:  # DistributedSampler(dataset, num_replicas, rank, shuffle, ...)
        value = sampler.args[3]
        return not (isinstance(value, ast.Constant) and value.value is False)
    return True


def _is_training_loader(ctx, loader: LoaderCall, name: str | None, iterated: set[str]) -> bool:
    words = " ".join([name or "", names_in(loader.arg("dataset")), _function_name(ctx, loader.call)])
    if EVAL_WORDS.search(words) and not TRAIN_WORDS.search(name or ""):
        return False
    if _is_true(loader.arg("shuffle")) or TRAIN_WORDS.search(words):
        return True
    return name is not None and name in iterated


def _single_pass(ctx, loader: LoaderCall) -> bool:
    """Every loop over the loader is shown to run once (no epoch loop around it, here or around a
    call of its function): its sampler is never asked for a second shuffle, so the epoch is moot."""
    loops = loops_over(ctx, loader.call)
    return bool(loops) and all(runs_repeatedly(ctx, loop) is False for loop in loops)


def _function_name(ctx, node) -> str:
    func = ctx.enclosing_function(node)
    return func.name if func is not None else ""


def _loaders_iterated_by_training_loops(ctx) -> set[str]:
    """Symbols iterated by the header of a training loop (``for x in loader`` /
    ``enumerate(self.train_loader)``)."""
    found = set()
    for loop in iterations(ctx).training_loops:
        if isinstance(loop, (ast.For, ast.AsyncFor)):
            for node in ast.walk(loop.iter):
                name = dotted_name(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
                if name:
                    found.add(name)
    return found


def _framework_managed(ctx, loader: LoaderCall, name: str | None) -> bool:
    """Loaders whose sampler a framework replaces: returned by a Lightning ``*_dataloader``
    hook, or handed to ``accelerator.prepare(...)`` / ``fabric.setup_dataloaders(...)``."""
    func = ctx.enclosing_function(loader.call)
    if func is not None and func.name.endswith("_dataloader") and isinstance(ctx.parent(func), ast.ClassDef):
        return True
    if name is None:
        return False
    for call in ctx.calls:
        if isinstance(call.func, ast.Attribute) and call.func.attr in _PREPARE_METHODS:
            if any(dotted_name(a) == name for a in call.args) or any(
                dotted_name(k.value) == name for k in call.keywords
            ):
                return True
    return False


def _decided_by_distributed_branch(ctx, call: ast.Call) -> bool:
    """Built in one branch of an ``if`` that chooses between the distributed and the single-process
    setup: its test names it (``if args.distributed:``), or the other branch does the distributed
    setup itself (builds a ``DistributedSampler``, starts the process group, wraps the model), so
    this branch is the single-process case whatever the flag is called (``if args.multinpu:``)."""
    child = call
    for ancestor in ctx.ancestors(call):
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        if isinstance(ancestor, (ast.If, ast.IfExp)) and child is not ancestor.test:
            if _DISTRIBUTED_WORDS.search(names_in(ancestor.test)):
                return True
            if any(_sets_up_distributed(ctx, node) for node in _other_branch(ancestor, child)):
                return True
        child = ancestor
    return False


def _other_branch(branching: ast.If | ast.IfExp, child: ast.AST) -> list[ast.AST]:
    """The branch of ``branching`` that does not hold ``child``."""
    body = branching.body if isinstance(branching.body, list) else [branching.body]
    orelse = branching.orelse if isinstance(branching.orelse, list) else [branching.orelse]
    return orelse if child in body else body


# Calls that only the distributed setup makes.
_DISTRIBUTED_SETUP = frozenset(
    {torch_names.DISTRIBUTED_SAMPLER, *torch_names.PROCESS_GROUP_SETUP, *torch_names.DATA_PARALLEL_WRAPPERS}
)


def _sets_up_distributed(ctx, node: ast.AST) -> bool:
    return any(isinstance(c, ast.Call) and ctx.call_qualname(c) in _DISTRIBUTED_SETUP for c in ast.walk(node))


def _shards_itself(ctx, loader: LoaderCall) -> bool:
    dataset = loader.arg("dataset")
    if dataset is None:
        return False
    value = resolve_value(ctx, dataset)
    return bool(_SHARDING_WORDS.search(names_in(dataset) + " " + names_in(value))) or selected_by_rank(ctx, dataset)
