"""Knowledge distillation: a frozen ResNet-50 teacher, a ResNet-18 student."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision.models import resnet18, resnet50


def distillation_loss(student_logits, teacher_logits, labels, T=4.0, alpha=0.7):
    soft = F.kl_div(
        F.log_softmax(student_logits / T, dim=-1),
        F.softmax(teacher_logits / T, dim=-1),
        reduction="batchmean",
    ) * (T * T)
    hard = F.cross_entropy(student_logits, labels)
    return alpha * soft + (1 - alpha) * hard


class Distiller:
    def __init__(self, teacher_ckpt, device="cuda", lr=0.05):
        self.device = device
        self.teacher = resnet50(num_classes=100)
        self.teacher.load_state_dict(torch.load(teacher_ckpt, map_location="cpu"))
        self.teacher.to(device).eval()
        for p in self.teacher.parameters():
            p.requires_grad_(False)
        self.student = resnet18(num_classes=100).to(device)
        self.optimizer = torch.optim.SGD(self.student.parameters(), lr=lr, momentum=0.9, nesterov=True)

    def train_epoch(self, loader):
        self.student.train()
        total, n = 0.0, 0
        for images, labels in loader:
            images, labels = images.to(self.device), labels.to(self.device)
            with torch.no_grad():
                teacher_logits = self.teacher(images)
            student_logits = self.student(images)
            loss = distillation_loss(student_logits, teacher_logits, labels)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            total += loss.item() * images.size(0)
            n += images.size(0)
        return total / n

    @torch.no_grad()
    def evaluate(self, loader):
        self.student.eval()
        hits = 0
        for images, labels in loader:
            preds = self.student(images.to(self.device)).argmax(-1)
            hits += (preds.cpu() == labels).sum().item()
        return hits / len(loader.dataset)

    def fit(self, train_loader, val_loader, epochs):
        scheduler = torch.optim.lr_scheduler.MultiStepLR(self.optimizer, milestones=[epochs // 2, 3 * epochs // 4])
        for epoch in range(epochs):
            loss = self.train_epoch(train_loader)
            scheduler.step()
            acc = self.evaluate(val_loader)
            print(f"epoch {epoch}: loss {loss:.3f} acc {acc:.3f}")
