"""A DDP script that shuffles with the plain DataLoader, so every rank reads the same batches."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Dropper(nn.Module):
    def __init__(self, d=64, p=0.3):
        super().__init__()
        self.conv = nn.Conv2d(3, d, 3, padding=1)
        self.fc = nn.Linear(d, 10)
        self.p = p

    def forward(self, x):
        x = F.dropout2d(F.relu(self.conv(x)), self.p)  # expect: TL011
        x = F.alpha_dropout(x.mean((2, 3)), p=self.p)  # expect: TL011
        return self.fc(x)


def main():
    dist.init_process_group("nccl")
    rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(rank)
    data = TensorDataset(torch.randn(2048, 3, 32, 32), torch.randint(0, 10, (2048,)))
    loader = DataLoader(data, batch_size=64, shuffle=True, num_workers=2)  # expect: TL021
    model = nn.parallel.DistributedDataParallel(Dropper().cuda(), device_ids=[rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(10):
        for x, y in loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x.cuda()), y.cuda()).backward()
            optimizer.step()


if __name__ == "__main__":
    main()
