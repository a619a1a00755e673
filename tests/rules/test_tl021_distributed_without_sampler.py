"""TL021 distributed-without-sampler: DDP training where every rank reads the same data."""

from expect_markers import check

CODE = "TL021"

DDP_HEADER = """
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
"""


# ----- positives ------------------------------------------------------------------------------


def test_shuffle_true_without_sampler(lint):
    findings = check(
        lint,
        DDP_HEADER
        + """
def main(rank, world_size, model, train_set, optimizer):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    model = DDP(model.to(rank), device_ids=[rank])
    train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=4)  # expect: TL021
    for epoch in range(10):
        for x, y in train_loader:
            optimizer.zero_grad()
            model(x).sub(y).pow(2).mean().backward()
            optimizer.step()
""",
        CODE,
    )
    message = findings[0].message
    assert "`shuffle=True` and no sampler" in message and "sampler=DistributedSampler(train_set)" in message
    assert "set_epoch" in message
    assert findings[0].severity == "warning" and findings[0].name == "distributed-without-sampler"


def test_loader_without_shuffle_iterated_by_training_loop(lint):
    findings = check(
        lint,
        DDP_HEADER
        + """
def run(model, data, optimizer):
    dist.init_process_group("gloo")
    ddp = DDP(model)
    loader = DataLoader(data, batch_size=16)  # expect: TL021
    for batch in loader:
        ddp(batch).mean().backward()
        optimizer.step()
""",
        CODE,
    )
    assert "has no sampler" in findings[0].message


def test_trainer_class_builds_train_loader(lint):
    check(
        lint,
        DDP_HEADER
        + """
class Trainer:
    def __init__(self, model, train_dataset, gpu_id):
        self.model = DDP(model, device_ids=[gpu_id])
        self.train_data = self._prepare(train_dataset)
    def _prepare(self, dataset):
        return DataLoader(dataset, batch_size=32, pin_memory=True, shuffle=True)  # expect: TL021
""",
        CODE,
    )


def test_distributed_sampler_without_set_epoch(lint):
    findings = check(
        lint,
        DDP_HEADER
        + """
def train(rank, model, train_set, optimizer, epochs):
    dist.init_process_group("nccl")
    model = DDP(model, device_ids=[rank])
    sampler = DistributedSampler(train_set, shuffle=True)
    loader = DataLoader(train_set, batch_size=32, sampler=sampler)  # expect: TL021
    for epoch in range(epochs):
        for x in loader:
            model(x).mean().backward()
            optimizer.step()
            optimizer.zero_grad()
""",
        CODE,
    )
    message = findings[0].message
    assert "`DistributedSampler` of this training `DataLoader` (line 10)" in message
    assert "sampler.set_epoch(epoch)" in message


def test_fsdp_wrapped_model(lint):
    check(
        lint,
        """
        import torch
        from torch.distributed import init_process_group
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.utils.data import DataLoader
        def fsdp_main(model, train_ds, optimizer):
            init_process_group("nccl")
            model = FSDP(model)
            train_loader = DataLoader(train_ds, batch_size=8)  # expect: TL021
            for epoch in range(3):
                for batch in train_loader:
                    model(batch).loss.backward()
                    optimizer.step()
        """,
        CODE,
    )


def test_gradients_all_reduced_by_hand(lint):
    """No DDP wrapper, but the step averages every parameter's gradient across ranks: data-parallel."""
    findings = check(
        lint,
        """
        import torch
        import torch.distributed as dist
        from torch.utils.data import DataLoader

        def average_gradients(model, world_size):
            for param in model.parameters():
                if param.grad is not None:
                    dist.all_reduce(param.grad, op=dist.ReduceOp.SUM)
                    param.grad /= world_size

        def run(rank, world_size, model, train_set, optimizer):
            dist.init_process_group("gloo", rank=rank, world_size=world_size)
            loader = DataLoader(train_set, batch_size=32, shuffle=True)  # expect: TL021
            for epoch in range(5):
                for x, y in loader:
                    optimizer.zero_grad()
                    torch.nn.functional.cross_entropy(model(x), y).backward()
                    average_gradients(model, world_size)
                    optimizer.step()
        """,
        CODE,
    )
    assert "`shuffle=True` and no sampler" in findings[0].message


def test_rank_seed_that_does_not_reach_the_loader(lint):
    """Seeding numpy and CUDA from the rank leaves torch's CPU generator (the loader's shuffle) shared;
    and a loader that does not shuffle reads the same order on every rank whatever the seed."""
    check(
        lint,
        DDP_HEADER
        + """
import numpy as np
def main(args, model, train_set, extra_set, optimizer):
    rank = dist.get_rank()
    np.random.seed(args.seed + rank)
    torch.cuda.manual_seed(args.seed + rank)
    model = DDP(model, device_ids=[rank])
    train_loader = DataLoader(train_set, batch_size=32, shuffle=True)  # expect: TL021
    for x, y in train_loader:
        model(x).sub(y).pow(2).mean().backward()
        optimizer.step()
""",
        CODE,
    )
    check(
        lint,
        DDP_HEADER
        + """
def main(args, model, train_set, optimizer):
    torch.manual_seed(args.seed + dist.get_rank())
    model = DDP(model)
    train_loader = DataLoader(train_set, batch_size=32)  # expect: TL021
    for x, y in train_loader:
        model(x).sub(y).pow(2).mean().backward()
        optimizer.step()
""",
        CODE,
    )


# ----- hard negatives -------------------------------------------------------------------------


def test_ranks_train_independent_networks(lint):
    """A process group that splits networks across ranks, not data: no DDP wrap, only a metric is
    all-reduced, and every network needs the whole dataset."""
    assert not lint(
        """
        import torch
        import torch.distributed as dist
        from torch.utils.data import DataLoader

        def train_members(rank, world_size, build_net, train_set, members_per_rank):
            dist.init_process_group("nccl", rank=rank, world_size=world_size)
            loader = DataLoader(train_set, batch_size=128, shuffle=True, num_workers=4)
            losses = []
            for k in range(members_per_rank):
                net = build_net(seed=rank * members_per_rank + k).cuda(rank)
                optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
                for x, y in loader:
                    optimizer.zero_grad()
                    loss = torch.nn.functional.cross_entropy(net(x.cuda(rank)), y.cuda(rank))
                    loss.backward()
                    optimizer.step()
                losses.append(loss.detach())
            total = torch.stack(losses).sum()
            dist.all_reduce(total)
            return total
        """,
        CODE,
    )


def test_shuffle_seeded_per_rank(lint):
    """Each rank seeds torch from its rank (through a helper and an augmented assignment): the ranks
    shuffle the dataset in different orders."""
    assert not lint(
        DDP_HEADER
        + """
import os
import random

def seed_everything(seed):
    random.seed(seed)
    torch.manual_seed(seed)

class Setup:
    def __init__(self, cfg):
        self.local_rank = int(os.environ["LOCAL_RANK"])
        seed = cfg.seed
        if cfg.world_size > 1:
            seed += self.local_rank
        seed_everything(seed)

def main(cfg, model, train_set, optimizer):
    setup = Setup(cfg)
    model = DDP(model, device_ids=[setup.local_rank])
    train_loader = DataLoader(train_set, batch_size=cfg.batch_size, shuffle=True)
    for x, y in train_loader:
        model(x).sub(y).pow(2).mean().backward()
        optimizer.step()
""",
        CODE,
    )


def test_generator_seeded_from_environment_rank(lint):
    assert not lint(
        DDP_HEADER
        + """
import os
def main(model, train_set, optimizer, base_seed=0):
    g = torch.Generator()
    g.manual_seed(base_seed + int(os.environ["RANK"]))
    model = DDP(model)
    loader = DataLoader(train_set, batch_size=16, shuffle=True, generator=g)
    for x in loader:
        model(x).mean().backward()
        optimizer.step()
""",
        CODE,
    )


def test_sampler_passed_and_set_epoch_called(lint):
    assert not lint(
        DDP_HEADER
        + """
class Trainer:
    def _run_epoch(self, epoch, loader):
        loader.sampler.set_epoch(epoch)
        for x, y in loader:
            self.opt.zero_grad()
            self.model(x).sub(y).pow(2).mean().backward()
            self.opt.step()
def prepare(dataset):
    return DataLoader(dataset, batch_size=32, shuffle=False, sampler=DistributedSampler(dataset))
def main(model, train_set):
    dist.init_process_group("nccl")
    trainer = Trainer(DDP(model), prepare(train_set))
""",
        CODE,
    )


def test_validation_loader_without_sampler(lint):
    assert not lint(
        DDP_HEADER
        + """
def main(rank, model, train_set, val_set, optimizer):
    dist.init_process_group("nccl")
    model = DDP(model, device_ids=[rank])
    train_sampler = DistributedSampler(train_set)
    train_loader = DataLoader(train_set, batch_size=32, shuffle=(train_sampler is None), sampler=train_sampler)
    val_loader = DataLoader(val_set, batch_size=64, shuffle=False)
    test_loader = DataLoader(test_set, batch_size=64)
    for epoch in range(5):
        train_sampler.set_epoch(epoch)
        for x in train_loader:
            model(x).mean().backward()
            optimizer.step()
""",
        CODE,
    )


def test_non_distributed_script(lint):
    assert not lint(
        """
        import torch
        from torch.utils.data import DataLoader
        def main(model, train_set, optimizer):
            train_loader = DataLoader(train_set, batch_size=32, shuffle=True)
            for x in train_loader:
                model(x).mean().backward()
                optimizer.step()
        """,
        CODE,
    )


def test_branch_on_distributed_flag_like_imagenet(lint):
    assert not lint(
        DDP_HEADER
        + """
def main(args, model, train_dataset, optimizer):
    if args.distributed:
        dist.init_process_group(args.dist_backend)
        model = DDP(model)
        train_loader = DataLoader(train_dataset, sampler=DistributedSampler(train_dataset))
    else:
        train_loader = DataLoader(train_dataset, shuffle=True)
    for epoch in range(args.epochs):
        if args.distributed:
            train_loader.sampler.set_epoch(epoch)
        for x in train_loader:
            model(x).mean().backward()
            optimizer.step()
""",
        CODE,
    )


def test_accelerate_prepare_and_lightning_hooks_insert_samplers(lint):
    assert not lint(
        DDP_HEADER
        + """
import lightning as L
class LitModel(L.LightningModule):
    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=32, shuffle=True)
def main(accelerator, model, train_set, optimizer):
    dist.init_process_group("nccl")
    train_dataloader = DataLoader(train_set, shuffle=True, batch_size=16)
    model, optimizer, train_dataloader = accelerator.prepare(model, optimizer, train_dataloader)
""",
        CODE,
    )


def test_dataset_sharded_by_rank(lint):
    assert not lint(
        DDP_HEADER
        + """
def main(rank, world_size, model, files, optimizer):
    dist.init_process_group("nccl")
    model = DDP(model)
    train_ds = ShardedStream(files, rank=rank, world_size=world_size)
    train_loader = DataLoader(train_ds, batch_size=16)
    for x in train_loader:
        model(x).mean().backward()
        optimizer.step()
""",
        CODE,
    )


def test_custom_sampler_and_unshuffled_distributed_sampler(lint):
    assert not lint(
        DDP_HEADER
        + """
def main(model, train_set, optimizer):
    dist.init_process_group("nccl")
    model = DDP(model)
    a = DataLoader(train_set, batch_sampler=RepeatAugSampler(train_set))
    b = DataLoader(train_set, sampler=DistributedSampler(train_set, shuffle=False))
    for x in a:
        model(x).mean().backward()
        optimizer.step()
""",
        CODE,
    )


# ----- data-parallel only on a path that can run ----------------------------------------------

_BENCHMARK = """
import os
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

def train(args, model, optimizer):
    WORLD
    data = TensorDataset(torch.randn(args.steps * 32, 3, 32, 32), torch.zeros(args.steps * 32).long())
    loader = DataLoader(data, batch_size=32, num_workers=2)MARK
    if world_size > 1:
        model = DDP(model, device_ids=[args.device])
    for images, labels in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(images), labels).backward()
        optimizer.step()
"""


def test_wrap_under_a_world_size_read_from_the_environment_is_reported(lint):
    # `world_size > 1` depends on how the script is launched: the DDP path can run.
    source = _BENCHMARK.replace("WORLD", 'world_size = int(os.environ.get("WORLD_SIZE", 1))')
    findings = check(lint, source.replace("MARK", "  # expect: TL021"), CODE)
    assert findings[0].line == 10 and "no sampler" in findings[0].message


def test_wrap_under_a_world_size_rebound_later_is_reported(lint):
    # Bound to 1, then to what the launcher says: not a constant.
    world = 'world_size = 1\n    if "WORLD_SIZE" in os.environ:\n        world_size = int(os.environ["WORLD_SIZE"])'
    check(lint, _BENCHMARK.replace("WORLD", world).replace("MARK", "  # expect: TL021"), CODE)


def test_wrap_under_a_constant_world_size_of_one_is_silent(lint):
    # `world_size = 1` is never rebound: the DDP branch is dead and one process trains.
    check(lint, _BENCHMARK.replace("WORLD", "world_size = 1").replace("MARK", ""), CODE)


def test_process_group_and_wrap_behind_a_module_flag_that_is_off_is_silent(lint):
    check(
        lint,
        DDP_HEADER
        + """
DISTRIBUTED = False

def main(model, train_set, optimizer):
    if DISTRIBUTED:
        dist.init_process_group("nccl")
        model = DDP(model)
    loader = DataLoader(train_set, batch_size=64, shuffle=True)
    for epoch in range(3):
        for x, y in loader:
            optimizer.zero_grad()
            model(x).sub(y).pow(2).mean().backward()
            optimizer.step()
""",
        CODE,
    )


# ----- a dataset selected by rank before the loader ---------------------------------------------

_RANK_SLICED = (
    DDP_HEADER
    + """
from torch.utils.data import Subset

def worker(rank, world_size, model, full_set, optimizer):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    model = DDP(model)
    shard_len = len(full_set) // world_size
    full_set = Subset(full_set, INDICES)
    loader = DataLoader(full_set, batch_size=16, shuffle=True)MARK
    for x, y in loader:
        optimizer.zero_grad()
        model(x).sub(y).pow(2).mean().backward()
        optimizer.step()
"""
)


def test_subset_whose_indices_draw_on_the_rank_is_silent(lint):
    # Each rank keeps `range(rank * n, (rank + 1) * n)`: its own disjoint shard.
    source = _RANK_SLICED.replace("INDICES", "range(rank * shard_len, (rank + 1) * shard_len)").replace("MARK", "")
    assert lint(source, CODE) == []


def test_subset_with_the_same_indices_on_every_rank_is_still_reported(lint):
    source = _RANK_SLICED.replace("INDICES", "range(shard_len)").replace("MARK", "  # expect: TL021")
    findings = check(lint, source, CODE)
    assert findings[0].line == 14
    assert "has `shuffle=True` and no sampler" in findings[0].message


# ----- set_epoch matters only when the loader is iterated more than once ----------------------

_ONE_PASS = (
    DDP_HEADER
    + """
dist.init_process_group("nccl")
model = DDP(build_model().cuda())
sampler = DistributedSampler(train_set)
loader = DataLoader(train_set, batch_size=32, sampler=sampler){marker}
{loop}
"""
)
_PASS = """for x, y in loader:
    optimizer.zero_grad()
    model(x.cuda()).sub(y.cuda()).pow(2).mean().backward()
    optimizer.step()"""


def test_single_top_level_pass_needs_no_epoch(lint):
    check(lint, _ONE_PASS.format(marker="", loop=_PASS), CODE)


def test_pass_in_a_function_called_once_needs_no_epoch(lint):
    loop = "def fit():\n" + "\n".join("    " + line for line in _PASS.splitlines()) + "\n\nfit()"
    check(lint, _ONE_PASS.format(marker="", loop=loop), CODE)


def test_pass_in_a_function_called_from_an_epoch_loop_is_reported(lint):
    loop = (
        "def fit():\n"
        + "\n".join("    " + line for line in _PASS.splitlines())
        + "\n\nfor epoch in range(20):\n    fit()"
    )
    findings = check(lint, _ONE_PASS.format(marker="  # expect: TL021", loop=loop), CODE)
    assert "never told the epoch" in findings[0].message


def test_pass_inside_an_epoch_loop_is_reported(lint):
    loop = "for epoch in range(20):\n" + "\n".join("    " + line for line in _PASS.splitlines())
    findings = check(lint, _ONE_PASS.format(marker="  # expect: TL021", loop=loop), CODE)
    assert "set_epoch" in findings[0].message


# ----- single-process sections of a file that also trains with DDP ------------------------------
# A walkthrough script trains the same network several ways in one file: a plain model, then an
# `nn.DataParallel` one (one process), each with its own loader at module level; the DDP section is a
# `worker(rank, world_size)` the script defines (and may never launch). Only what a rank runs or
# reads feeds the distributed training.

WALKTHROUGH = """
import os
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

data = TensorDataset(torch.randn(512, 8), torch.randint(0, 2, (512,)))

def fit(net, loader, opt, epochs):
    for _ in range(epochs):
        for x, y in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(net(x), y).backward()
            opt.step()
    return net

# section 1: one GPU
net = nn.Linear(8, 2)
plain_loader = DataLoader(data, batch_size=32, shuffle=True)
net = fit(net, plain_loader, torch.optim.SGD(net.parameters(), lr=0.1), 2)

# section 2: nn.DataParallel, still one process
wide = nn.DataParallel(nn.Linear(8, 2))
wide_loader = DataLoader(data, batch_size=64, shuffle=True)
wide = fit(wide, wide_loader, torch.optim.SGD(wide.parameters(), lr=0.1), 2)

# section 3: DistributedDataParallel, one process per GPU
def init_group(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    dist.init_process_group("nccl", rank=rank, world_size=world_size)

def worker(rank, world_size):
    init_group(rank, world_size)
    model = DDP(nn.Linear(8, 2).to(rank), device_ids=[rank])
    rank_loader = DATA_LOADER_OF_THE_RANK
    fit(model, rank_loader, torch.optim.SGD(model.parameters(), lr=0.1), 2)
    dist.destroy_process_group()
"""


def test_loaders_of_single_process_sections_are_silent_the_ranks_loader_reported(lint):
    source = WALKTHROUGH.replace(
        "DATA_LOADER_OF_THE_RANK", "DataLoader(data, batch_size=32, shuffle=True)  # expect: TL021"
    )
    findings = check(lint, source, CODE)
    assert (
        len(findings) == 1
        and findings[0].line
        == source.split("\n").index("    rank_loader = DataLoader(data, batch_size=32, shuffle=True)  # expect: TL021")
        + 1
    )
    assert "`shuffle=True` and no sampler in a distributed (DDP) script" in findings[0].message
    assert "sampler=DistributedSampler(data)" in findings[0].message


def test_module_level_loader_read_by_the_rank_is_reported(lint):
    source = WALKTHROUGH.replace("DATA_LOADER_OF_THE_RANK", "wide_loader").replace(
        "wide_loader = DataLoader(data, batch_size=64, shuffle=True)",
        "wide_loader = DataLoader(data, batch_size=64, shuffle=True)  # expect: TL021",
    )
    findings = check(lint, source, CODE)
    assert "`shuffle=True` and no sampler" in findings[0].message


def test_module_level_loader_of_a_script_whose_top_level_starts_the_ranks_is_reported(lint):
    # `worker(0, 1)` run by the module-level code: that code runs in a rank, its loaders with it.
    source = (
        WALKTHROUGH.replace("DATA_LOADER_OF_THE_RANK", "DataLoader(data, batch_size=32, shuffle=True)  # expect: TL021")
        .replace(
            "plain_loader = DataLoader(data, batch_size=32, shuffle=True)",
            "plain_loader = DataLoader(data, batch_size=32, shuffle=True)  # expect: TL021",
        )
        .replace(
            "wide_loader = DataLoader(data, batch_size=64, shuffle=True)",
            "wide_loader = DataLoader(data, batch_size=64, shuffle=True)  # expect: TL021",
        )
        + "\nworker(0, 1)\n"
    )
    check(lint, source, CODE)


# ----- a branch whose other side does the distributed setup, whatever the flag is called ----------------

_DEVICE_FLAG = (
    DDP_HEADER
    + """
def main(args, net, train_dataset, optimizer):
    if args.multinpu:
        dist.init_process_group("hccl", rank=args.local_rank, world_size=args.world_size)
        net = DDP(net, device_ids=[args.local_rank])
        train_sampler = DistributedSampler(train_dataset)
        train_loader = DataLoader(train_dataset, batch_size=32, sampler=train_sampler, drop_last=True)
    else:
        train_loader = DataLoader(train_dataset, batch_size=32, shuffle=True)
    for epoch in range(args.epochs):
        if args.multinpu:
            train_sampler.set_epoch(epoch)
        for images, targets in train_loader:
            net(images, targets).backward()
            optimizer.step()
"""
)


def test_single_process_branch_of_a_flag_whose_other_branch_sets_up_ddp_is_silent(lint):
    assert lint(_DEVICE_FLAG, CODE) == []


def test_loader_of_the_branch_that_sets_up_ddp_is_still_reported(lint):
    source = _DEVICE_FLAG.replace(
        "        train_loader = DataLoader(train_dataset, batch_size=32, sampler=train_sampler, drop_last=True)",
        "        train_loader = DataLoader(train_dataset, batch_size=32, shuffle=True)  # expect: TL021",
    )
    findings = check(lint, source, CODE)
    assert "`shuffle=True` and no sampler" in findings[0].message
