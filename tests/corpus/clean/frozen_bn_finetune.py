"""Detection-style fine-tuning with frozen batch-norm statistics (small per-GPU batches)."""
import torch
import torch.nn as nn
import torchvision


def freeze_bn_stats(model):
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.eval()


class Backbone(nn.Module):
    def __init__(self, norm_eval=True):
        super().__init__()
        self.body = torchvision.models.resnet50(weights="IMAGENET1K_V2")
        self.body.fc = nn.Identity()
        self.norm_eval = norm_eval

    def train(self, mode=True):
        super().train(mode)
        if mode and self.norm_eval:
            for m in self.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.eval()
        return self

    def forward(self, x):
        return self.body(x)


def finetune(model, loader, epochs=12, lr=0.02):
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=lr, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[8, 11], gamma=0.1)
    for epoch in range(epochs):
        model.train()
        freeze_bn_stats(model)
        for images, targets in loader:
            loss_dict = model(images, targets)
            loss = sum(loss_dict.values())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        scheduler.step()
        print(f"epoch {epoch}: loss {loss.item():.3f}")

