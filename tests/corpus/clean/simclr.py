"""SimCLR pretraining with the NT-Xent loss."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision


class ProjectionHead(nn.Module):
    def __init__(self, d_in=512, d_hidden=512, d_out=128):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, d_hidden), nn.BatchNorm1d(d_hidden), nn.ReLU(inplace=True),
                                 nn.Linear(d_hidden, d_out))

    def forward(self, x):
        return self.net(x)


class SimCLR(nn.Module):
    def __init__(self):
        super().__init__()
        backbone = torchvision.models.resnet18()
        backbone.fc = nn.Identity()
        self.backbone = backbone
        self.head = ProjectionHead()

    def forward(self, x):
        return self.head(self.backbone(x))


def nt_xent(z1, z2, temperature=0.5):
    b = z1.size(0)
    z = F.normalize(torch.cat([z1, z2], dim=0), dim=1)
    sim = z @ z.t() / temperature
    sim.fill_diagonal_(float("-inf"))
    targets = torch.cat([torch.arange(b, 2 * b), torch.arange(0, b)]).to(z.device)
    return F.cross_entropy(sim, targets)


def pretrain(loader, epochs=100, device="cuda"):
    model = SimCLR().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=1e-6)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs * len(loader))
    for epoch in range(epochs):
        model.train()
        for (view1, view2), _ in loader:
            x = torch.cat([view1, view2]).to(device, non_blocking=True)
            feats = model(x)
            z1, z2 = feats.view(2, -1, feats.size(-1)).unbind(0)
            loss = nt_xent(z1, z2)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")
    return model
