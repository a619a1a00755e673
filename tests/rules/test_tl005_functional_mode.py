"""TL005 on models whose only mode-dependent part is functional: `F.dropout`/`F.batch_norm` depend on
the module's mode only when told it by a value that can follow it (`training=self.training`). Told
nothing, a dropout is on in both modes (TL011's finding) and batch norm uses its running statistics in
both: `model.eval()` would change nothing, so forgetting it is not a bug of its own."""

import pytest
from expect_markers import check

SCRIPT = """
import torch
import torch.nn as nn
import torch.nn.functional as F

class AlexNetSmall(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 32, 5)
        self.fc1 = nn.Linear(32 * 24 * 24, 256)
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x):
        x = torch.flatten(F.max_pool2d(F.relu(self.conv(x)), 1), 1)
        x = F.relu(self.fc1(x))
        x = {dropout}
        return self.fc2(x)

model = AlexNetSmall()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

def train(epoch):
    model.train()
    for images, labels in train_loader:
        optimizer.zero_grad()
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()

def test():
    correct = 0
    with torch.no_grad():
        for images, labels in test_loader:
            outputs = model(images){marker}
            correct += (outputs.argmax(1) == labels).sum().item()
    print(correct)

for epoch in range(10):
    train(epoch)
    test()
"""


@pytest.mark.parametrize(
    "dropout",
    [
        "F.dropout(x, p=0.5, training=self.training)",
        "F.dropout(x, 0.5, self.training)",
        "F.dropout(x, p=0.5, training=self.training and self.mc is False)",
    ],
)
def test_reported_when_the_functional_dropout_follows_the_mode(lint, dropout):
    source = SCRIPT.format(dropout=dropout, marker="  # expect: TL005")
    (finding,) = check(lint, source, "TL005")
    assert finding.message.startswith("`model(...)` evaluates in training mode in `test()`")


@pytest.mark.parametrize(
    "dropout",
    [
        "F.dropout(x, p=0.5)",  # on in both modes: TL011 reports it, eval() would not turn it off
        "F.dropout(x, p=0.5, training=True)",  # Monte-Carlo dropout, on purpose, in both modes
        "F.batch_norm(x, None, None, training=True)",  # batch statistics in both modes
    ],
)
def test_silent_when_no_functional_call_follows_the_mode(lint, dropout):
    source = SCRIPT.format(dropout=dropout, marker="")
    assert [f for f in lint(source) if f.code == "TL005"] == []
