"""FSDP training of a transformer with torch.compile, bf16 mixed precision and a sharded sampler."""
import functools
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import MixedPrecision
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train_epoch(model, loader, optimizer, epoch, rank):
    model.train()
    loader.sampler.set_epoch(epoch)
    totals = torch.zeros(2, device=rank)
    for input_ids, labels in loader:
        input_ids, labels = input_ids.to(rank), labels.to(rank)
        optimizer.zero_grad(set_to_none=True)
        logits = model(input_ids)
        loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)
        loss.backward()
        model.clip_grad_norm_(1.0)
        optimizer.step()
        totals += torch.stack([loss.detach(), torch.ones((), device=rank)])
    dist.all_reduce(totals)
    return (totals[0] / totals[1]).item()


def main(build_model, block_cls, dataset, epochs=3):
    dist.init_process_group("nccl")
    rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={block_cls})
    bf16 = MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16, buffer_dtype=torch.bfloat16)
    model = FSDP(build_model(), auto_wrap_policy=policy, mixed_precision=bf16, device_id=rank)
    model = torch.compile(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=True)
    loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset, shuffle=True), num_workers=2)
    for epoch in range(epochs):
        loss = train_epoch(model, loader, optimizer, epoch, rank)
        if rank == 0:
            print(f"epoch {epoch}: loss {loss:.4f}")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    raise SystemExit("launch with torchrun and a model factory")
