"""A probe helper that takes one optimizer step on the model it is handed: called for every batch,
each step adds to the gradients the previous calls left behind."""
import torch
import torch.nn.functional as F


def probe_step(model, optimizer, images, labels):
    logits = model(images)
    F.cross_entropy(logits, labels).backward()
    optimizer.step()  # expect: TL001
    return logits.argmax(1).eq(labels).float().mean().item()


def fit_probe(backbone, head, loader, epochs, device):
    model = torch.nn.Sequential(backbone, head).to(device)
    optimizer = torch.optim.SGD(head.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(epochs):
        accuracy = [probe_step(model, optimizer, x.to(device), y.to(device)) for x, y in loader]
        print(f"epoch {epoch}: train accuracy {sum(accuracy) / len(accuracy):.3f}")
    return head
