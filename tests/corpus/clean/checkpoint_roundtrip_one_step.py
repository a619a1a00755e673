"""Checkpoint round-trip test for a sharded trainer: a helper builds a small wrapped model and its
optimizer and takes one step so that the optimizer has state to save; each call starts afresh."""
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

from trainer.checkpoint import load_sharded, save_sharded
from trainer.optim import build_optimizer


def fresh_model_and_optimizer(cfg):
    model = FSDP(torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).cuda())
    optimizer = build_optimizer(cfg, model)
    model(torch.rand(8, 16).cuda()).square().mean().backward()
    optimizer.step()
    return model, optimizer


def run(rank, world_size, cfg, folder):
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "29511")
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    torch.cuda.set_device(rank)
    model, optimizer = fresh_model_and_optimizer(cfg)
    save_sharded(folder, model, optimizer)
    restored, restored_optimizer = fresh_model_and_optimizer(cfg)
    load_sharded(folder, restored, restored_optimizer)
    for before, after in zip(optimizer.state.values(), restored_optimizer.state.values()):
        torch.testing.assert_close(before["exp_avg"], after["exp_avg"])
    dist.destroy_process_group()


def test_checkpoint_round_trip(tmp_path, cfg):
    mp.spawn(run, args=(2, cfg, str(tmp_path)), nprocs=2, join=True)
