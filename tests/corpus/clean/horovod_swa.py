"""Horovod data-parallel training with stochastic weight averaging in the last epochs."""
import horovod.torch as hvd
import torch
import torch.nn.functional as F
from torch.optim.swa_utils import SWALR, AveragedModel, update_bn
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main(model, train_set, val_set, epochs=40, swa_start=30, base_lr=0.05):
    hvd.init()
    torch.cuda.set_device(hvd.local_rank())
    sampler = DistributedSampler(train_set, num_replicas=hvd.size(), rank=hvd.rank())
    loader = DataLoader(train_set, batch_size=128, sampler=sampler, num_workers=4)
    model.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=base_lr * hvd.size(), momentum=0.9)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    swa_model = AveragedModel(model)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=swa_start)
    swa_scheduler = SWALR(optimizer, swa_lr=0.01)

    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        model.train()
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
        if epoch >= swa_start:
            swa_model.update_parameters(model)
            swa_scheduler.step()
        else:
            scheduler.step()

    update_bn(loader, swa_model, device=torch.device("cuda"))
    if hvd.rank() == 0:
        swa_model.eval()
        val_loader = DataLoader(val_set, batch_size=512)
        with torch.no_grad():
            correct = sum((swa_model(x.cuda()).argmax(1).cpu() == y).sum().item() for x, y in val_loader)
        print("SWA accuracy:", correct / len(val_set))
        torch.save(swa_model.module.state_dict(), "swa.pt")
