"""DDP pretraining on a streamed corpus: each rank reads its own shards, so no sampler is involved."""
import glob
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


class ShardedTokens(IterableDataset):
    """Yields fixed-length token blocks from the shards assigned to this rank and worker."""

    def __init__(self, files, rank, world_size, block=1024):
        self.files = sorted(files)[rank::world_size]
        self.block = block

    def __iter__(self):
        info = get_worker_info()
        files = self.files if info is None else self.files[info.id::info.num_workers]
        for path in files:
            tokens = torch.load(path)
            for i in range(0, tokens.numel() - self.block - 1, self.block):
                chunk = tokens[i:i + self.block + 1]
                yield chunk[:-1], chunk[1:]


def main(model, data_dir, steps=10000, lr=3e-4):
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dataset = ShardedTokens(glob.glob(os.path.join(data_dir, "*.pt")), rank, world)
    loader = DataLoader(dataset, batch_size=8, num_workers=4, pin_memory=True)
    model = DDP(model.cuda(local), device_ids=[local])
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.1)
    model.train()
    for step, (x, y) in enumerate(loader):
        if step >= steps:
            break
        x, y = x.cuda(local, non_blocking=True), y.cuda(local, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(x)
        loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if rank == 0 and step % 100 == 0:
            print(f"step {step}: loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    raise SystemExit("launch with torchrun")
