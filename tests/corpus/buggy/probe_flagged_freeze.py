"""Fine-tuning whose training function freezes batch-norm statistics only when asked to: without
the flag, nothing switches the model back to train mode after the first validation."""
import torch
import torch.nn.functional as F
import torchvision


def train_epoch(model, loader, optimizer, freeze_bn=False):
    if freeze_bn:
        model.eval()
    for images, labels in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()


def validate(model, loader):
    model.eval()
    with torch.no_grad():
        return sum((model(x).argmax(1) == y).sum().item() for x, y in loader) / len(loader.dataset)


def fit(model, train_loader, val_loader, args):
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    for epoch in range(args.epochs):
        train_epoch(model, train_loader, optimizer, freeze_bn=args.freeze_bn)
        print(epoch, validate(model, val_loader))  # expect: TL007


if __name__ == "__main__":
    fit(torchvision.models.resnet50(num_classes=100), train_loader, val_loader, parse_args())
