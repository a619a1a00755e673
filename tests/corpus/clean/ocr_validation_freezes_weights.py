"""Text recognizer: validation switches every weight's gradient off, the training loop back on."""

import torch
from torch import nn

from recognizer import CRNN, ctc_decode, line_loaders

model = CRNN(img_height=32, num_classes=37, hidden=256)
criterion = nn.CTCLoss(zero_infinity=True)
optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-4)
train_loader, val_loader = line_loaders("data/lines", batch_size=64)


def validate(loader, max_batches=100):
    for weight in model.parameters():
        weight.requires_grad = False
    model.eval()
    correct = seen = 0
    for step, (images, texts, lengths) in enumerate(loader):
        if step == max_batches:
            break
        log_probs = model(images)
        predictions = ctc_decode(log_probs.argmax(2))
        correct += sum(p == t for p, t in zip(predictions, texts))
        seen += len(texts)
    print(f"val accuracy {correct / max(seen, 1):.3f}")


for epoch in range(25):
    for step, (images, targets, lengths) in enumerate(train_loader):
        for weight in model.parameters():
            weight.requires_grad = True
        model.train()
        log_probs = model(images)
        sizes = torch.full((images.size(0),), log_probs.size(0), dtype=torch.long)
        loss = criterion(log_probs, targets, sizes, lengths)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 500 == 0:
            validate(val_loader)
    torch.save(model.state_dict(), f"crnn_{epoch}.pt")
