"""How a distributed script splits its work across ranks, as far as the file shows it.

Starting a process group says only that several processes talk. What they share decides whether
every rank must read a different part of the data:

* data-parallel training (one model, each rank a shard of the data, gradients averaged) shows itself
  by a model wrapped in ``DistributedDataParallel``/FSDP, or by parameter gradients (``p.grad``)
  handed to a reducing collective (``dist.all_reduce(p.grad)``): a hand-written DDP step;
* other splits (each rank trains its own independent networks, evaluates its own checkpoints, runs
  its own hyper-parameters) need the whole dataset on every rank.

Only code that can run shows it: a wrap under a branch that constants decide against
(``world_size = 1`` ... ``if world_size > 1: model = DDP(model)``) trains nothing data-parallel.

A rank that seeds torch's generator from its rank (``torch.manual_seed(seed + rank)``) also shuffles
differently from the others: its loaders do not replay another rank's order. So does a rank whose
dataset is a selection drawn from its rank (``Subset(ds, range(rank * n, (rank + 1) * n))``): it
reads its own shard.

Which code runs in the ranks is told by what may run what (``analysis.mentions``): a rank runs the
code that may start the process group or train data-parallel, the code that may run that, and all
it runs in turn. A file may hold other code besides: a tutorial's single-process sections (a plain
model, an ``nn.DataParallel`` one, a model split across two GPUs) before its DDP ``main(rank)``.
A value built only by code that no rank runs, and read by none, lives in a single process.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from torchlint.analysis.conditions import never_runs
from torchlint.analysis.dataflow import dataflow
from torchlint.analysis.influence import draws_on
from torchlint.analysis.mentions import mentions
from torchlint.torchmodel import vocabulary as torch_names
from torchlint.torchmodel.scripts import refers_to_global

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

# Identifiers and environment keys that hold a process's place among the ranks
# (`rank`, `args.local_rank`, `dist.get_rank()`, `os.environ["LOCAL_RANK"]`, `xm.get_ordinal()`,
# `accelerator.process_index`).
_RANK_WORDS = re.compile(r"rank|ordinal|process_index", re.I)
# Environment keys that hold it (`os.environ["LOCAL_RANK"]`).
_RANK_KEY = re.compile(r"((local|global|world|node)_)?rank", re.I)
# Callees that seed a generator (`torch.manual_seed`, `g.manual_seed`, `seed_everything`, a file's own
# `set_seed`/`init_seeds`).
_SEEDING = re.compile(r"seed", re.I)


def data_parallel_call(ctx: FileContext) -> ast.Call | None:
    """The first call of the file that trains a model data-parallel: a DDP/FSDP wrap, or a reducing
    collective handed parameter gradients. None when the file shows neither."""
    return ctx.shared(("distributed", "data_parallel"), lambda: _first_data_parallel_call(ctx))


def starts_process_group(ctx: FileContext) -> bool:
    return any(
        ctx.call_qualname(call) in torch_names.PROCESS_GROUP_SETUP and not never_runs(ctx, call) for call in ctx.calls
    )


def rank_scopes(ctx: FileContext) -> frozenset[ast.AST]:
    """The scopes (functions, ``ctx.tree`` for module-level code) that may run in a process of the
    distributed training: those that may run a process-group start or a data-parallel call, and all
    that these may run."""

    def build() -> frozenset[ast.AST]:
        starts = [
            call
            for call in ctx.calls
            if (ctx.call_qualname(call) in torch_names.PROCESS_GROUP_SETUP or _trains_data_parallel(ctx, call))
            and not never_runs(ctx, call)
        ]
        found = mentions(ctx)
        return found.scopes_run_by(found.scopes_running(starts))

    return ctx.shared(("distributed", "rank_scopes"), build)


def built_outside_ranks(ctx: FileContext, value: ast.AST) -> bool:
    """Whether the object built at ``value`` is shown to live in no process of the distributed
    training: the code building it runs (module-level code, or a function the file mentions) but is
    not run by a rank, nor is any other method of its class (which reads the instance's attributes),
    and no rank reads it through a module-level name. False when that cannot be told."""
    found = mentions(ctx)
    ranks = rank_scopes(ctx)
    scope = found.scope_of(value)
    if scope in ranks or (scope is not ctx.tree and not found.mentioned(scope)):
        return False
    cls = ctx.parent(scope)
    if isinstance(cls, ast.ClassDef) and any(s in ranks for s in cls.body):
        return False
    return not any(_reads_global(ctx, name, value) for name in ctx.nodes(ast.Name) if found.scope_of(name) in ranks)


def _reads_global(ctx: FileContext, name: ast.Name, value: ast.AST) -> bool:
    """Whether ``name``, read inside a function, may hold the module-level ``value`` (or a container
    built around it)."""
    if not isinstance(name.ctx, ast.Load) or ctx.enclosing_function(name) is None:
        return False
    if not refers_to_global(ctx, name):
        return False
    return any(
        origin is not None and any(node is value for node in ast.walk(origin)) for origin in dataflow(ctx).origins(name)
    )


def seeds_per_rank(ctx: FileContext) -> bool:
    """Whether the file seeds torch's generator with a value drawn from the process's rank
    (``torch.manual_seed(args.seed + rank)``, ``seed += dist.get_rank()`` ... ``set_seed(seed)``)."""
    return ctx.shared(("distributed", "seeds_per_rank"), lambda: any(_rank_seeding(ctx, c) for c in ctx.calls))


def selected_by_rank(ctx: FileContext, dataset: ast.AST) -> bool:
    """Whether a value ``dataset`` may hold is a selection from another dataset that draws on the
    process's rank (``Subset(ds, range(rank * n, (rank + 1) * n))``, ``ds.shard(n, index=rank)``):
    each rank reads its own part. The first argument, what is selected from, does not count."""
    for origin in dataflow(ctx).origins(dataset):
        if not isinstance(origin, ast.Call):
            continue
        selection = [*origin.args[1:], *(k.value for k in origin.keywords)]
        if isinstance(origin.func, ast.Attribute):  # `ds.shard(...)`: the receiver is what is selected from
            selection = [*origin.args, *(k.value for k in origin.keywords)]
        if any(draws_on(ctx, argument, _names_rank) for argument in selection):
            return True
    return False


def _first_data_parallel_call(ctx: FileContext) -> ast.Call | None:
    for call in ctx.calls:
        # A call under `if world_size > 1:` with `world_size = 1` runs on no rank; asked last,
        # of the few calls that qualify, because it reads the conditions around the call.
        if _trains_data_parallel(ctx, call) and not never_runs(ctx, call):
            return call
    return None


def _trains_data_parallel(ctx: FileContext, call: ast.Call) -> bool:
    qual = ctx.call_qualname(call)
    if qual in torch_names.DATA_PARALLEL_WRAPPERS:
        return True
    if qual is None and isinstance(call.func, ast.Name) and call.func.id in torch_names.DATA_PARALLEL_WRAPPER_NAMES:
        return True
    return qual in torch_names.REDUCING_COLLECTIVES and bool(call.args) and draws_on(ctx, call.args[0], _is_gradient)


def _is_gradient(expr: ast.AST) -> bool:
    """A parameter's gradient: ``p.grad``, ``param.grad.data``."""
    return isinstance(expr, ast.Attribute) and expr.attr == "grad"


def _rank_seeding(ctx: FileContext, call: ast.Call) -> bool:
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    if not _SEEDING.search(name) or ctx.call_qualname(call) in torch_names.SEEDS_OUTSIDE_TORCH:
        return False
    arguments = [*call.args, *(k.value for k in call.keywords)]
    return any(draws_on(ctx, argument, _names_rank) for argument in arguments)


def _names_rank(expr: ast.AST) -> bool:
    if isinstance(expr, ast.Name):
        return bool(_RANK_WORDS.search(expr.id))
    if isinstance(expr, ast.Attribute):
        return bool(_RANK_WORDS.search(expr.attr))
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return bool(_RANK_KEY.fullmatch(expr.value))
    return False
