"""A DistributedDataParallel fine-tuning script, launched with torchrun, where
every rank reads the same data, the loss is given probabilities, fp16
gradients underflow and resumed optimizer state stays on the CPU.

Each buggy line ends with an ``# expect: CODE`` comment naming the torchlint rule
that reports it; ``tests/test_examples.py`` checks that exactly these are found.
"""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

dist.init_process_group("nccl")
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)

features = torch.randn(10_000, 512)
labels = torch.randint(0, 10, (10_000,))
train_loader = DataLoader(  # expect: TL019, TL021
    TensorDataset(features, labels), batch_size=128, shuffle=True, num_workers=4
)

model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 10), nn.Softmax(dim=1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
if os.path.exists("resume.pt"):
    optimizer.load_state_dict(torch.load("resume.pt", map_location="cpu")["optimizer"])
model.cuda(local_rank)  # expect: TL017
model = DDP(model, device_ids=[local_rank])
criterion = nn.CrossEntropyLoss()

for epoch in range(10):
    for x, y in train_loader:
        x, y = x.cuda(local_rank), y.cuda(local_rank)
        optimizer.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = criterion(model(x), y)  # expect: TL012
        loss.backward()  # expect: TL018
        optimizer.step()
    if local_rank == 0:
        torch.save(model.module.state_dict(), f"checkpoint_{epoch}.pt")

dist.destroy_process_group()
